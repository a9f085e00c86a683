"""Device telemetry through NVML (utilization, temperature, power, clocks, memory), as torch.cuda's."""

import os
import re

from ._devices import _index

__all__ = ["clock_rate", "device_memory_used", "memory_usage", "power_draw", "temperature", "utilization"]

_PYNVML_MISSING = (
    "nvidia-ml-py does not seem to be installed or it can't be imported; the NVML queries (utilization, "
    "temperature, power_draw, clock_rate, memory_usage, device_memory_used) need it: pip install nvidia-ml-py"
)
_GPU_DIE_SENSOR = 0  # NVML_TEMPERATURE_GPU
_SM_CLOCK = 1  # NVML_CLOCK_SM


def _pynvml():
    """The ``pynvml`` module (from nvidia-ml-py), NVML initialized; imported on first use, never at import."""
    try:
        import pynvml
    except ImportError as error:
        raise ModuleNotFoundError(_PYNVML_MISSING, name="pynvml") from error
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_DriverNotLoaded as error:
        raise RuntimeError("cuda driver can't be loaded, is cuda enabled?") from error
    return pynvml


def _visible_devices():
    """``CUDA_VISIBLE_DEVICES`` as NVML sees it, parsed as the CUDA runtime does (PyTorch's
    ``_parse_visible_devices``): ordinals up to the first invalid or negative entry, or ``GPU-``/``MIG-`` UUID
    prefixes; a repeated entry makes the list empty. Unset: all devices."""
    variable = os.getenv("CUDA_VISIBLE_DEVICES")
    if variable is None:
        return list(range(64))
    entries = [entry.strip() for entry in variable.split(",")]
    for prefix in ("GPU-", "MIG-"):
        if variable.startswith(prefix):
            found = []
            for entry in entries:
                if entry in found:
                    return []
                if not entry.startswith(prefix):
                    break
                found.append(entry)
            return found
    ordinals = []
    for entry in entries:
        leading_number = re.match(r"[+-]?[0-9]+", entry)  # "1gpu2" counts as 1, as strtoul reads it
        ordinal = int(leading_number.group()) if leading_number else -1
        if ordinal in ordinals:
            return []
        if ordinal < 0:
            break
        ordinals.append(ordinal)
    return ordinals


def _uuid_ordinals(pynvml, prefixes):
    """NVML indices of the devices whose UUIDs start with ``prefixes``, up to the first unknown or ambiguous one."""
    uuids = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(index))
        uuids.append(uuid.decode() if isinstance(uuid, bytes) else uuid)
    ordinals = []
    for prefix in prefixes:
        matches = [index for index, uuid in enumerate(uuids) if uuid.startswith(prefix)]
        if len(matches) != 1:
            break
        if matches[0] in ordinals:
            return []
        ordinals.append(matches[0])
    return ordinals


def _handle(device):
    """The NVML handle of a CUDA device (the current one for None): NVML numbers devices ignoring
    ``CUDA_VISIBLE_DEVICES``, so the CUDA index is mapped through it first."""
    pynvml = _pynvml()
    index = _index(device)
    visible = _visible_devices()
    if visible and isinstance(visible[0], str):
        visible = _uuid_ordinals(pynvml, visible)
    if not 0 <= index < len(visible):
        raise RuntimeError(f"device {index} is not visible (CUDA_VISIBLE_DEVICES={visible})")
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(visible[index])


def utilization(device=None):
    """Percent of the last sample period (1/6 s to 1 s) in which a kernel ran on the device, as ``nvidia-smi``
    reports it. Needs ``pip install nvidia-ml-py``.

        >>> 0 <= agnostic.cuda.utilization() <= 100  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetUtilizationRates(handle).gpu


def memory_usage(device=None):
    """Percent of the last sample period in which device memory was read or written, as ``nvidia-smi`` reports it.
    Needs ``pip install nvidia-ml-py``.

        >>> 0 <= agnostic.cuda.memory_usage() <= 100  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetUtilizationRates(handle).memory


def device_memory_used(device=None):
    """Bytes of device memory in use by every process, as ``nvidia-smi`` reports it (``memory_allocated`` counts
    only this process's tensors). Needs ``pip install nvidia-ml-py``.

        >>> agnostic.cuda.device_memory_used() > 0  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetMemoryInfo(handle).used


def temperature(device=None):
    """The GPU die's temperature in degrees Celsius. Needs ``pip install nvidia-ml-py``.

        >>> 0 < agnostic.cuda.temperature() < 120  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetTemperature(handle, _GPU_DIE_SENSOR)


def power_draw(device=None):
    """The device's average power draw over the last sample period, in milliwatts. Needs
    ``pip install nvidia-ml-py``.

        >>> agnostic.cuda.power_draw() > 0  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetPowerUsage(handle)


def clock_rate(device=None):
    """The SM clock in MHz over the last sample period. Needs ``pip install nvidia-ml-py``.

        >>> agnostic.cuda.clock_rate() > 0  # doctest: +SKIP
        True
    """
    pynvml, handle = _handle(device)
    return pynvml.nvmlDeviceGetClockInfo(handle, _SM_CLOCK)
