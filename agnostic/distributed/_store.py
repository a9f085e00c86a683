"""Key-value stores for the rendezvous of a process group (``Store``, ``TCPStore``, ``HashStore``, ``PrefixStore``),
as ``torch.distributed``'s: one process serves a ``TCPStore``, the others connect to it; a ``get`` waits for its key."""

import datetime
import pickle
import socket
import struct
import threading
import time

_DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


class Store:
    """The interface of a key-value store (``set``, ``get``, ``add``, ``wait``, ``check``, ``delete_key``,
    ``compare_set``, ``num_keys``), as ``torch.distributed.Store``; values are bytes (a ``str`` is encoded).

        >>> store = agnostic.distributed.HashStore()
        >>> store.set("answer", "42")
        >>> store.get("answer")
        b'42'
    """

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self):
        """How long ``get`` and ``wait`` wait for a key before raising."""
        return datetime.timedelta(seconds=self._timeout)

    def set_timeout(self, timeout):
        """Change how long ``get`` and ``wait`` wait."""
        self._timeout = _seconds(timeout)

    def set(self, key, value):
        """Store ``value`` under ``key``."""
        self._call("set", key, _as_bytes(value))

    def get(self, key):
        """The value of ``key``, waiting (up to the timeout) for another process to set it."""
        return self._call("get", key, None, self._timeout)

    def add(self, key, amount):
        """Add ``amount`` to the integer under ``key`` (0 when missing) and return the new value."""
        return self._call("add", key, int(amount))

    def compare_set(self, key, expected_value, desired_value):
        """Set ``key`` to ``desired_value`` if its value is ``expected_value`` (or it is missing and
        ``expected_value`` is empty); return the value it holds afterwards."""
        return self._call("compare_set", key, (_as_bytes(expected_value), _as_bytes(desired_value)))

    def check(self, keys):
        """True when every key of ``keys`` is set (without waiting)."""
        return self._call("check", list(keys), None)

    def wait(self, keys, timeout=None):
        """Wait until every key of ``keys`` is set; ``TimeoutError`` (a ``RuntimeError`` as PyTorch's
        ``DistStoreError``) names the keys still missing at the deadline."""
        deadline = self._timeout if timeout is None else _seconds(timeout)
        self._call("wait", list(keys), None, deadline)

    def delete_key(self, key):
        """Remove ``key``; True if it was there."""
        return self._call("delete", key, None)

    def num_keys(self):
        """How many keys the store holds."""
        return self._call("num_keys", None, None)


class StoreTimeoutError(RuntimeError, TimeoutError):
    """A store's ``get``/``wait`` reached its timeout (PyTorch's ``DistStoreError``)."""


class _Table:
    """The keys and values, shared by a server's connection threads (or a HashStore's callers)."""

    def __init__(self):
        self.values = {}
        self.changed = threading.Condition()

    def execute(self, operation, key, value, timeout=None):
        with self.changed:
            if operation == "set":
                self.values[key] = value
                self.changed.notify_all()
                return None
            if operation == "add":
                total = int(self.values.get(key, b"0")) + value
                self.values[key] = str(total).encode()
                self.changed.notify_all()
                return total
            if operation == "compare_set":
                expected, desired = value
                current = self.values.get(key)
                if current == expected or (current is None and not expected):
                    self.values[key] = desired
                    self.changed.notify_all()
                    return desired
                return current if current is not None else expected
            if operation == "check":
                return all(k in self.values for k in key)
            if operation == "delete":
                return self.values.pop(key, None) is not None
            if operation == "num_keys":
                return len(self.values)
            keys = [key] if operation == "get" else key
            deadline = time.monotonic() + timeout
            while True:
                missing = [k for k in keys if k not in self.values]
                if not missing:
                    return self.values[key] if operation == "get" else None
                left = deadline - time.monotonic()
                if left <= 0:
                    return StoreTimeoutError(f"timed out after {timeout:g} s waiting for key(s) {missing} in the store")
                self.changed.wait(left)


class HashStore(Store):
    """A store held in this process (for threads of one process, and tests).

        >>> store = agnostic.distributed.HashStore()
        >>> store.add("count", 2)
        2
    """

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        super().__init__(timeout)
        self._table = _Table()

    def _call(self, operation, key, value, timeout=None):
        result = self._table.execute(operation, key, value, timeout)
        if isinstance(result, Exception):
            raise result
        return result


def _send(connection, message):
    payload = pickle.dumps(message)
    connection.sendall(struct.pack("!Q", len(payload)) + payload)


def _receive_exactly(connection, size):
    chunks = []
    while size:
        chunk = connection.recv(min(size, 1 << 20))
        if not chunk:
            raise ConnectionError("the store's connection was closed by the other side")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(connection):
    (size,) = struct.unpack("!Q", _receive_exactly(connection, 8))
    return pickle.loads(_receive_exactly(connection, size))


class _Server:
    """Serves a _Table on a TCP port: one thread per connected client."""

    def __init__(self, host, port):
        self.table = _Table()
        self.listener = socket.create_server((host, port), reuse_port=False)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, name="agnostic-store-server", daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection):
        with connection:
            while True:
                try:
                    request = _receive(connection)
                except (ConnectionError, OSError, EOFError):
                    return
                _send(connection, self.table.execute(*request))

    def close(self):
        self.listener.close()


class TCPStore(Store):
    """A store served over TCP by the process created with ``is_master=True`` (at ``host_name:port``; port 0 picks
    a free one, see ``.port``); the others connect to it, retrying until ``timeout``. As
    ``torch.distributed.TCPStore``.

        >>> server = agnostic.distributed.TCPStore("127.0.0.1", 0, is_master=True)
        >>> client = agnostic.distributed.TCPStore("127.0.0.1", server.port, is_master=False)
        >>> client.set("x", b"1"); server.get("x")
        b'1'
    """

    def __init__(self, host_name, port, world_size=None, is_master=False, timeout=_DEFAULT_TIMEOUT,
                 wait_for_workers=True, multi_tenant=False, **ignored):
        super().__init__(timeout)
        self.host = host_name
        self._server = _Server("" if host_name in ("", "0.0.0.0") else host_name, port) if is_master else None
        self.port = self._server.port if is_master else int(port)
        self._lock = threading.Lock()
        self._connection = self._connect()

    def _connect(self):
        deadline = time.monotonic() + self._timeout
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        while True:
            try:
                connection = socket.create_connection((host, self.port), timeout=10)
                connection.settimeout(None)
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return connection
            except OSError as error:
                if time.monotonic() > deadline:
                    raise StoreTimeoutError(
                        f"could not reach the TCPStore at {host}:{self.port} within {self._timeout:g} s ({error}): "
                        "check MASTER_ADDR/MASTER_PORT and that rank 0 (or the launcher) is running"
                    ) from None
                time.sleep(0.05)

    def _call(self, operation, key, value, timeout=None):
        with self._lock:
            _send(self._connection, (operation, key, value, timeout))
            result = _receive(self._connection)
        if isinstance(result, Exception):
            raise result
        return result

    def close(self):
        """Close the connection (and stop serving, on the master)."""
        self._connection.close()
        if self._server is not None:
            self._server.close()


class PrefixStore(Store):
    """Another store's keys under ``prefix + "/"``, as ``torch.distributed.PrefixStore``.

        >>> store = agnostic.distributed.PrefixStore("job", agnostic.distributed.HashStore())
        >>> store.set("k", "v"); store.underlying_store.get("job/k")
        b'v'
    """

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _key(self, key):
        return [self._key(k) for k in key] if isinstance(key, list) else f"{self.prefix}/{key}"

    def _call(self, operation, key, value, timeout=None):
        return self.underlying_store._call(operation, None if key is None else self._key(key), value, timeout)

    def set_timeout(self, timeout):
        """Change how long ``get`` and ``wait`` wait (here and in the underlying store)."""
        super().set_timeout(timeout)
        self.underlying_store.set_timeout(timeout)

    def get(self, key):
        """The value of ``key``, waiting up to the timeout."""
        return self._call("get", key, None, self._timeout)
