"""Sparse tensors (COO, CSR, CSC, BSR and BSC layouts): construction, conversion to and from dense, and the ops
PyTorch's sparse tensors support, as ``torch.sparse_coo_tensor`` and friends.

A sparse tensor is its component tensors (COO: ``indices``, int64 of shape ``(sparse_dim, nnz)``, and ``values`` of
shape ``(nnz, *dense_sizes)``; the compressed layouts: compressed and plain indices and values, a block per entry
for BSR/BSC) plus a size. Every operation is
made of differentiable agnostic ops on those components, so it runs on every device and gradients reach ``values``
as PyTorch's do. Sparse tensors are instances of a subclass of ``agnostic.Tensor`` (made on first use: Tensor is
defined after the ops); dense tensors and the dispatch of dense ops know nothing of it. Any other op given a sparse
tensor reads its dense array, which refuses with a message naming the op and ``.to_dense()``.
"""

import functools
import sys

import numpy

from .. import _dtypes, _layout
from .._printing import _formatter, get_printoptions
from .._size import Size
from .._tensor import TensorBase, _normalize_dim
from ._registry import _DECLARED, Composite, Elementwise, composite, public_names, tensor_method
from .creation import arange, tensor as make_tensor, zeros
from .indexing import index_add, index_select, nonzero
from .reduction import cumsum
from .shape import cat, repeat_interleave, stack
from .sorting import argsort, searchsorted, unique
from .statistics import bincount

sparse_coo = _layout.layout("sparse_coo")
sparse_csr = _layout.layout("sparse_csr")
sparse_csc = _layout.layout("sparse_csc")
sparse_bsr = _layout.layout("sparse_bsr")
sparse_bsc = _layout.layout("sparse_bsc")

# The compressed layouts: their index tensors' names. Rows are compressed in CSR and BSR, columns in CSC and BSC; the
# block layouts store a ``(rows, columns)`` block per entry.
_COMPRESSED = {sparse_csr: ("crow_indices", "col_indices"), sparse_csc: ("ccol_indices", "row_indices"),
               sparse_bsr: ("crow_indices", "col_indices"), sparse_bsc: ("ccol_indices", "row_indices")}
_ROW_MAJOR = (sparse_csr, sparse_bsr)
_BLOCKED = (sparse_bsr, sparse_bsc)


# ----- what a sparse tensor is ------------------------------------------------------------------------------------
class SparseTensorMethods:
    """What sparse tensors answer and compute, in front of ``agnostic.Tensor``'s dense methods (which the sparse
    class refuses, naming ``.to_dense()``)."""

    __slots__ = ()

    # ----- the dense array is what sparse tensors don't have: ops that read it are refused -----------------------
    @property
    def _data(self):
        raise _refusal(_calling_op(), self._layout)

    # ----- metadata ---------------------------------------------------------------------------------------------
    @property
    def layout(self):
        """``agnostic.sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr`` or ``sparse_bsc``."""
        return self._layout

    @property
    def is_sparse(self):
        """True for the COO layout, as ``torch.Tensor.is_sparse``."""
        return self._layout is sparse_coo

    @property
    def is_sparse_csr(self):
        """True for the CSR layout, as ``torch.Tensor.is_sparse_csr``."""
        return self._layout is sparse_csr

    @property
    def dtype(self):
        """The values' dtype."""
        return self._value_tensor.dtype

    @property
    def shape(self):
        """The size of the sparse tensor (dense sizes included)."""
        return Size(self._size)

    def size(self, dim=None):
        """The size, or the size of dimension ``dim``."""
        if dim is None:
            return Size(self._size)
        return self._size[_normalize_dim(dim, len(self._size), allow_scalar=False)]

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._size)

    def dim(self):
        """The number of dimensions."""
        return len(self._size)

    ndimension = dim

    def numel(self):
        """The number of elements of the dense equivalent."""
        count = 1
        for size in self._size:
            count *= size
        return count

    nelement = numel

    def element_size(self):
        """The size of one value in bytes."""
        return self._value_tensor.element_size()

    @property
    def itemsize(self):
        """The size of one value in bytes."""
        return self._value_tensor.element_size()

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def __hash__(self):
        return id(self)

    def sparse_dim(self):
        """The number of sparse dimensions (indexed by ``indices``)."""
        return self._sparse_dim

    def dense_dim(self):
        """The number of dense dimensions (those of each value)."""
        return len(self._size) - self._sparse_dim

    def _nnz(self):
        """The number of specified elements (stored values)."""
        return self._value_tensor.shape[0]

    def is_coalesced(self):
        """True when the indices are sorted and unique (COO only)."""
        _require(self, sparse_coo, "is_coalesced")
        return self._coalesced

    # ----- components -------------------------------------------------------------------------------------------
    def indices(self):
        """The COO indices, int64 of shape ``(sparse_dim, nnz)``, of a coalesced tensor."""
        _require(self, sparse_coo, "indices")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._index_tensor

    def values(self):
        """The stored values, of shape ``(nnz, *dense_sizes)`` (a coalesced tensor's, for COO)."""
        if self._layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._value_tensor

    def _indices(self):
        _require(self, sparse_coo, "_indices")
        return self._index_tensor

    def _values(self):
        return self._value_tensor

    def crow_indices(self):
        """The compressed row indices of a CSR tensor."""
        _require(self, _ROW_MAJOR, "crow_indices")
        return self._compressed

    def col_indices(self):
        """The column indices of a CSR tensor."""
        _require(self, _ROW_MAJOR, "col_indices")
        return self._plain

    def ccol_indices(self):
        """The compressed column indices of a CSC tensor."""
        _require(self, (sparse_csc, sparse_bsc), "ccol_indices")
        return self._compressed

    def row_indices(self):
        """The row indices of a CSC tensor."""
        _require(self, (sparse_csc, sparse_bsc), "row_indices")
        return self._plain

    # ----- autograd: a sparse tensor's gradient is that of its values ------------------------------------------
    @property
    def requires_grad(self):
        """Whether the values require grad."""
        return self._value_tensor.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Make the values (a leaf) require grad; returns ``self``."""
        self._value_tensor.requires_grad_(requires_grad)
        return self

    @property
    def _requires_grad(self):
        return self._value_tensor._requires_grad

    @property
    def grad_fn(self):
        """The values' ``grad_fn``."""
        return self._value_tensor.grad_fn

    @property
    def _grad_fn(self):
        return self._value_tensor._grad_fn

    @property
    def is_leaf(self):
        """True when the values are a leaf."""
        return self._value_tensor.is_leaf

    @property
    def grad(self):
        """The gradient of a leaf sparse tensor: sparse, with its indices and the values' gradient."""
        grad = self._value_tensor.grad
        if grad is None:
            return None
        if self._layout is not sparse_coo or self._coalesced:
            return _like(self, grad)
        # PyTorch's is coalesced: the gradient for each element, which every repeat of its index received.
        sizes = self._size[:self._sparse_dim]
        kept, inverse = unique(_linear(self._index_tensor, sizes), sorted=True, return_inverse=True)
        values = zeros((kept.shape[0],) + tuple(grad.shape[1:]), dtype=grad.dtype, device=grad.device)
        return _coo(_unravel(kept, sizes), values.index_put((inverse,), grad), self._size, True)

    @grad.setter
    def grad(self, value):
        if value is None:
            self._value_tensor.grad = None
        elif isinstance(value, SparseTensorMethods) and value._layout is self._layout \
                and value._value_tensor.shape == self._value_tensor.shape:
            self._value_tensor.grad = value._value_tensor
        else:
            raise RuntimeError("assigned grad of a sparse tensor must be None or a sparse tensor of the same "
                               "layout and indices")

    def detach(self):
        """The same sparse tensor, cut from autograd history (the components share memory)."""
        return _like(self, self._value_tensor.detach())

    @property
    def data(self):
        """``detach()``."""
        return self.detach()

    def clone(self):
        """A copy with its own components."""
        return _like(self, self._value_tensor.clone(), clone_indices=True)

    # ----- moves and casts --------------------------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """The sparse tensor with its components moved and/or cast (``to(device)``, ``to(dtype)``...)."""
        values = self._value_tensor.to(*args, **kwargs)
        if values is self._value_tensor:
            return self
        return _like(self, values, device=values.device)

    def cuda(self, device=None, non_blocking=False):
        """The sparse tensor on a CUDA device."""
        values = self._value_tensor.cuda(device, non_blocking)
        return self if values is self._value_tensor else _like(self, values, device=values.device)

    def cpu(self):
        """The sparse tensor in CPU memory."""
        values = self._value_tensor.cpu()
        return self if values is self._value_tensor else _like(self, values, device=values.device)

    # ----- printing -----------------------------------------------------------------------------------------------
    def __repr__(self):
        return _sparse_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    def __reduce__(self):
        return (_rebuild, (self._layout.name, self._components(), self._size))

    def _components(self):
        if self._layout is sparse_coo:
            return (self._index_tensor.detach(), self._value_tensor.detach())
        return (self._compressed, self._plain, self._value_tensor.detach())

    # ----- conversions ------------------------------------------------------------------------------------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor (repeated COO indices add up); differentiable with respect to the values."""
        coo = _as_coo(self)
        values = coo._value_tensor if dtype is None else coo._value_tensor.to(dtype)
        sparse_sizes, dense_sizes = coo._size[:coo._sparse_dim], coo._size[coo._sparse_dim:]
        count = 1
        for size in sparse_sizes:
            count *= size
        flat = zeros((count,) + dense_sizes, dtype=values.dtype, device=coo._device)
        return index_add(flat, 0, _linear(coo._index_tensor, sparse_sizes), values).reshape(coo._size)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """``self`` in ``layout`` (COO by default)."""
        target = sparse_coo if layout is None else layout
        if sparse_dim is not None and target is sparse_coo and sparse_dim != self._sparse_dim:
            raise RuntimeError(f"to_sparse: sparse_dim {sparse_dim} differs from the tensor's {self._sparse_dim}; "
                               "convert with .to_dense().to_sparse(sparse_dim)")
        return _convert(self, target, blocksize)

    def to_sparse_coo(self):
        """``self`` in the COO layout."""
        return _convert(self, sparse_coo, None)

    def to_sparse_csr(self, dense_dim=None):
        """``self`` in the CSR layout (2-D only)."""
        return _convert(self, sparse_csr, None)

    def to_sparse_csc(self, dense_dim=None):
        """``self`` in the CSC layout (2-D only)."""
        return _convert(self, sparse_csc, None)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        """``self`` in the BSR layout, with blocks of ``blocksize`` (rows, columns)."""
        return _convert(self, sparse_bsr, blocksize)

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        """``self`` in the BSC layout, with blocks of ``blocksize`` (rows, columns)."""
        return _convert(self, sparse_bsc, blocksize)

    def coalesce(self):
        """Indices sorted and made unique, the values of repeats added up (COO only)."""
        _require(self, sparse_coo, "coalesce")
        return _coalesced(self)

    def sparse_mask(self, mask):
        """A sparse tensor with ``mask``'s indices and ``self``'s values there."""
        return _sparse_mask(self, mask)

    def sparse_resize_(self, size, sparse_dim, dense_dim):
        """Change the size in place, keeping the entries (which must fit; ``sparse_dim`` and ``dense_dim`` as now
        unless the tensor is empty)."""
        _require(self, sparse_coo, "sparse_resize_")
        size = tuple(int(s) for s in size)
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), "
                               f"but got {len(size)}")
        if self._nnz() and (sparse_dim != self._sparse_dim or size[sparse_dim:] != self._size[self._sparse_dim:]):
            raise RuntimeError("changing the number of sparse or dense dimensions, or a dense size, of a non-empty "
                               "sparse tensor is not supported; use sparse_resize_and_clear_")
        if self._nnz():
            largest = self._index_tensor.amax(1).tolist()
            if any(index >= bound for index, bound in zip(largest, size)):
                raise RuntimeError("shrinking the size of a sparse dimension below its largest index is not "
                                   "supported; use sparse_resize_and_clear_")
        self.__dict__.update(_size=size, _sparse_dim=sparse_dim)
        return self

    def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim):
        """Change the size in place and remove every entry."""
        _require(self, sparse_coo, "sparse_resize_and_clear_")
        size = tuple(int(s) for s in size)
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), "
                               f"but got {len(size)}")
        self.__dict__.update(_size=size, _sparse_dim=sparse_dim, _coalesced=True,
                             _index_tensor=zeros((sparse_dim, 0), dtype=_dtypes.int64, device=self._device),
                             _value_tensor=zeros((0,) + size[sparse_dim:], dtype=self.dtype, device=self._device))
        return self

    # ----- arithmetic ---------------------------------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        """``self + alpha * other``: sparse for a sparse ``other`` of the same size, dense for a dense one."""
        return _add(self, other, alpha)

    def __add__(self, other):
        return _add(self, other, 1)

    def __radd__(self, other):
        return _add(self, other, 1)

    def sub(self, other, *, alpha=1):
        """``self - alpha * other``."""
        return _add(self, other, -alpha)

    def __sub__(self, other):
        return _add(self, other, -1)

    def __rsub__(self, other):
        return _add(-self, other, 1)

    def mul(self, other):
        """Times a number, a dense tensor of the same size (the values at the indices) or a sparse one."""
        return _mul(self, other)

    __mul__ = __rmul__ = mul

    def mul_(self, other):
        """Multiply the values in place by a number or a 0-dim dense tensor (what gradient clipping does to a sparse
        gradient), as ``torch.Tensor.mul_``.

            >>> grad = agnostic.sparse_coo_tensor([[0, 2]], [3.0, 4.0], (3,))
            >>> grad.mul_(0.5).to_dense()
            tensor([1.5000, 0.0000, 2.0000])
        """
        if isinstance(other, TensorBase) and (isinstance(other, SparseTensorMethods) or other.ndim):
            raise RuntimeError("in-place multiplication of a sparse tensor takes a number or a 0-dim tensor; "
                               "multiply out of place (sparse * other) instead")
        # New values rather than a write into the old: a gradient's values may be a broadcast view (of sum()'s).
        self.__dict__["_value_tensor"] = self._value_tensor * other
        return self

    def zero_(self):
        """Remove every entry in place, keeping the size (a zero sparse tensor), as ``torch.Tensor.zero_``.

            >>> grad = agnostic.sparse_coo_tensor([[0, 2]], [3.0, 4.0], (3,))
            >>> grad.zero_()._nnz()
            0
        """
        _require(self, sparse_coo, "zero_")
        return self.sparse_resize_and_clear_(self._size, self._sparse_dim, len(self._size) - self._sparse_dim)

    def div(self, other):
        """Divided by a number (or a 0-dim tensor)."""
        if isinstance(other, TensorBase) and (isinstance(other, SparseTensorMethods) or other.ndim):
            raise RuntimeError("sparse division requires a scalar divisor; divide the dense form (.to_dense())")
        coo = _coalesced(self) if self._layout is sparse_coo else self
        return _like(coo, coo._value_tensor / other)

    __truediv__ = div

    def neg(self):
        """``-self``."""
        return _like(self, -self._value_tensor)

    __neg__ = negative = neg

    def __pos__(self):
        return self

    def sum(self, dim=None, keepdim=False, dtype=None):
        """The sum of all entries (a dense 0-dim tensor), or over ``dim`` (as ``agnostic.sparse.sum``)."""
        if keepdim:
            raise RuntimeError("sum(keepdim=True) is not supported for sparse tensors; use .to_dense().sum()")
        return _sum(self, dim, dtype)

    def transpose(self, dim0, dim1):
        """Two sparse dimensions swapped (COO)."""
        return _transpose(self, dim0, dim1)

    def t(self):
        """The transpose of a 2-D sparse matrix."""
        if len(self._size) > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(self._size)}D")
        return self if len(self._size) < 2 else _transpose(self, 0, 1)

    # ----- products -------------------------------------------------------------------------------------------
    def mm(self, mat2):
        """The matrix product with a dense matrix (dense result), differentiable in both."""
        return _matmul(self, mat2, "mm")

    def matmul(self, other):
        """``mm`` for a dense matrix, the matrix-vector product for a dense vector."""
        return _matmul(self, other, "matmul")

    def __matmul__(self, other):
        return _matmul(self, other, "matmul")

    def smm(self, mat):
        """The product with a dense matrix, as a sparse tensor (see ``agnostic.smm``)."""
        return smm(self, mat)

    def sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)`` as a sparse tensor (see ``agnostic.sspaddmm``)."""
        return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


def _zero_preserving(name):
    """A unary op that maps 0 to 0, applied to the (coalesced) values, as PyTorch's sparse kernels do."""
    def method(self):
        coo = _coalesced(self) if self._layout is sparse_coo else self
        return _like(coo, getattr(coo._value_tensor, name)())
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name}`` of the stored values (it maps zero to zero)."
    return method


for _name in ("abs", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "expm1", "log1p",
              "sign", "sgn", "ceil", "floor", "round", "trunc", "frac", "square", "relu", "erf", "deg2rad",
              "rad2deg", "conj"):
    setattr(SparseTensorMethods, _name, _zero_preserving(_name))
del _name

# Tensor's attributes that a sparse tensor keeps as they are: Python's machinery, and what reads only the device or
# the dtype (through the properties above).
_KEPT = frozenset({
    "__init_subclass__", "__new__", "__class__", "__getattribute__", "__setattr__", "__delattr__", "__dict__",
    "__weakref__", "__slots__", "__module__", "__doc__", "__qualname__", "__array_priority__", "__init__", "_version",
    "_output_nr", "plain", "recording", "_device", "device", "is_cuda", "is_cpu", "get_device", "is_floating_point",
    "is_complex", "is_signed", "float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte", "bool",
    "cfloat", "cdouble", "to_device", "type", "_converted", "_converted_as", "is_meta", "is_quantized", "is_nested",
    "is_mkldnn", "is_mps", "is_xpu", "is_xla", "is_ipu", "is_vulkan", "is_maia", "is_mtia", "is_conj", "is_neg",
    "is_inference", "is_distributed", "register_hook", "retain_grad", "retains_grad", "backward",
})


def _refused_method(name):
    def refused(self, *args, **kwargs):
        raise _refusal(name, self._layout)
    refused.__name__ = refused.__qualname__ = name
    return refused


def _refused_property(name):
    def refused(self):
        if name.startswith("__"):  # protocols (``__cuda_array_interface__``): ``hasattr`` must say False
            raise AttributeError(f"sparse tensors have no {name}")
        raise _refusal(name, self._layout, call="")
    return property(refused)


@functools.cache
def sparse_class():
    """The class of sparse tensors (every layout): ``agnostic.Tensor`` with ``SparseTensorMethods`` in front, and
    every other dense method refused (made on first use, since Tensor is defined after the ops)."""
    tensor_class = TensorBase.plain
    namespace = {"__slots__": (), "__module__": "agnostic", "__qualname__": "Tensor",
                 "__hash__": SparseTensorMethods.__hash__,
                 "__doc__": "A sparse tensor (COO, CSR, CSC, BSR or BSC layout): a subclass of agnostic.Tensor."}
    own = set(dir(SparseTensorMethods))
    for cls in tensor_class.__mro__[:-1]:
        for name, value in vars(cls).items():
            if name in own or name in _KEPT or name in namespace:
                continue
            if isinstance(value, property):
                namespace[name] = _refused_property(name)
            elif callable(value) and not isinstance(value, type):
                namespace[name] = _refused_method(name)
    return type("Tensor", (SparseTensorMethods, tensor_class), namespace)


def _refusal(op, layout, call="()"):
    op = f"{op}{call}" if op else "this operation"
    return NotImplementedError(f"{op} does not support sparse tensors (layout {layout!r}); convert with "
                               ".to_dense() first, or use the agnostic.sparse function of that name if there is one")


@functools.cache
def _callers():
    """{id of an elementwise op's caller: its name}, to name the op in a refusal."""
    return {id(op.call): op.name for op in _DECLARED if isinstance(op, Elementwise)}


_GENERIC_FRAMES = frozenset({"function", "method", "operator", "on_device", "wrapper", "inplace", "refused",
                             "<lambda>", "<genexpr>", "<listcomp>", "<dictcomp>"})


def _calling_op():
    """The name of the agnostic op the user called that reached a sparse tensor's dense array (the outermost agnostic
    frame), or None."""
    frame, name = sys._getframe(2), None
    while frame is not None and frame.f_globals.get("__name__", "").startswith("agnostic"):
        local = frame.f_locals
        op = local.get("self")
        if isinstance(op, (Composite, Elementwise)):
            name = op.name
        elif id(local.get("call")) in _callers():
            name = _callers()[id(local.get("call"))]
        elif frame.f_code.co_name not in _GENERIC_FRAMES and not frame.f_code.co_name.startswith("_"):
            name = frame.f_code.co_name
        frame = frame.f_back
    return name


def _require(tensor, layouts, name):
    layouts = layouts if isinstance(layouts, tuple) else (layouts,)
    if tensor._layout not in layouts:
        raise RuntimeError(f"{name} expected sparse layout {layouts[0]!r} but got {tensor._layout!r}; convert with "
                           f".to_sparse(layout={layouts[0]!r}) first")


# ----- making sparse tensors --------------------------------------------------------------------------------------
def _new(layout, size, sparse_dim, device, values, **components):
    tensor = object.__new__(sparse_class())
    tensor._device = device
    tensor.__dict__.update(_layout=layout, _size=tuple(size), _sparse_dim=sparse_dim, _value_tensor=values,
                           **components)
    return tensor


def _coo(indices, values, size, coalesced):
    return _new(sparse_coo, size, indices.shape[0], values.device, values, _index_tensor=indices, _coalesced=coalesced)


def _compressed(layout, compressed, plain, values, size):
    return _new(layout, size, 2, values.device, values, _compressed=compressed, _plain=plain)


def _blocksize(tensor):
    """The block size of a BSR or BSC tensor, else None."""
    return tuple(tensor._value_tensor.shape[1:3]) if tensor._layout in _BLOCKED else None


def _like(tensor, values, clone_indices=False, device=None):
    """A sparse tensor with ``tensor``'s indices (moved to ``device``) and ``values``."""
    def moved(indices):
        indices = indices.to(device) if device is not None else indices
        return indices.clone() if clone_indices else indices
    if tensor._layout is sparse_coo:
        return _coo(moved(tensor._index_tensor), values, tensor._size, tensor._coalesced)
    return _compressed(tensor._layout, moved(tensor._compressed), moved(tensor._plain), values, tensor._size)


def _own_values(values, requires_grad):
    """The values a new sparse tensor keeps: the given tensor itself when it carries history (gradients flow back to
    it), else a tensor of its own (so ``requires_grad_`` on the sparse tensor doesn't change the caller's); with
    ``requires_grad``, a new leaf, as PyTorch's factories make."""
    if values.requires_grad and not requires_grad:
        return values
    values = values.detach()
    return values.requires_grad_() if requires_grad else values


def _as_index_tensor(value, device, name):
    indices = value if isinstance(value, TensorBase) else make_tensor(value, device=device)
    if indices.dtype not in (_dtypes.int64, _dtypes.int32):
        raise RuntimeError(f"{name} must be an int64 tensor, but got {indices.dtype}")
    return indices.to(device=device, dtype=_dtypes.int64)


def _as_values(values, dtype, device):
    if not isinstance(values, TensorBase):
        values = make_tensor(values, dtype=dtype, device=device)
    elif isinstance(values, SparseTensorMethods):
        raise RuntimeError("values of a sparse tensor must be a dense tensor")
    return values.to(device=device, dtype=dtype) if (dtype is not None or device is not None) else values


@composite(method=False, device_guard=False)
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor with ``values`` at ``indices`` (int64, shape ``(sparse_dim, nnz)``), as
    ``torch.sparse_coo_tensor``; ``values`` has shape ``(nnz, *dense_sizes)``. ``size`` defaults to the smallest
    that holds the indices. Gradients flow to ``values`` where it requires grad.

        >>> s = agnostic.sparse_coo_tensor([[0, 1], [2, 0]], [3.0, 4.0], (2, 3))
        >>> s
        tensor(indices=tensor([[0, 1],
                               [2, 0]]),
               values=tensor([3., 4.]),
               size=(2, 3), nnz=2, layout=agnostic.sparse_coo)
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 0.]])
    """
    values = _as_values(values, dtype, device)
    device = values.device
    indices = _as_index_tensor(indices, device, "indices")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional (nnz, *dense_sizes); wrap a number in a list")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {indices.shape[1]}, "
                           f"nnz from values: {values.shape[0]}")
    sparse_dim = indices.shape[0]
    if size is None:
        if indices.shape[1] == 0:
            raise RuntimeError("sparse_coo_tensor without a size needs at least one index; pass size=")
        size = tuple(int(m) + 1 for m in indices.amax(1).tolist()) + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {[values.shape[0], *size[sparse_dim:]]}, got "
                           f"{list(values.shape)}")
    if check_invariants and indices.shape[1]:
        _check_bounds(indices, size[:sparse_dim])
    coalesced = bool(is_coalesced) or indices.shape[1] <= 1
    return _coo(indices, _own_values(values, requires_grad), size, coalesced)


def _check_bounds(indices, sizes):
    if (indices < 0).any().item():
        raise RuntimeError("found negative index in the indices of a sparse tensor")
    largest = indices.amax(1).tolist()
    for dim, (index, bound) in enumerate(zip(largest, sizes)):
        if index >= bound:
            raise RuntimeError(f"size is inconsistent with indices: for dim {dim}, size is {bound} but found index "
                               f"{index}")


def _compressed_tensor(layout, compressed, plain, values, size, dtype, device, requires_grad, check_invariants):
    values = _as_values(values, dtype, device)
    device = values.device
    compressed_name, plain_name = _COMPRESSED[layout]
    compressed = _as_index_tensor(compressed, device, compressed_name)
    plain = _as_index_tensor(plain, device, plain_name)
    if compressed.ndim != 1 or plain.ndim != 1:
        raise RuntimeError(f"{compressed_name} and {plain_name} must be 1-D (batched {layout.name} tensors are not "
                           "supported: use a COO tensor)")
    if plain.shape[0] != values.shape[0]:
        raise RuntimeError(f"{plain_name} and values must have the same number of elements, but got "
                           f"{plain.shape[0]} and {values.shape[0]}")
    block = tuple(values.shape[1:3]) if layout in _BLOCKED else (1, 1)
    if layout in _BLOCKED and values.ndim < 3:
        raise RuntimeError(f"values of a {layout.name[-3:].upper()} tensor must have shape (nnz, block rows, block "
                           f"columns, *dense_sizes), got {list(values.shape)}")
    dense_sizes = tuple(values.shape[3 if layout in _BLOCKED else 1:])
    if size is None:
        extent = int(plain.amax().item()) + 1 if plain.shape[0] else 0
        outer = compressed.shape[0] - 1
        grid = (outer, extent) if layout in _ROW_MAJOR else (extent, outer)
        size = (grid[0] * block[0], grid[1] * block[1]) + dense_sizes
    size = tuple(int(s) for s in size)
    outer = size[0] // block[0] if layout in _ROW_MAJOR else size[1] // block[1]
    if len(size) != 2 + len(dense_sizes) or compressed.shape[0] != outer + 1 or tuple(size[2:]) != dense_sizes \
            or size[0] % block[0] or size[1] % block[1]:
        raise RuntimeError(f"{compressed_name} must have {outer + 1} elements for size {size}, and values shape "
                           f"(nnz, *block, *dense_sizes) with blocks dividing the size; got {compressed.shape[0]} and "
                           f"{list(values.shape)}")
    if check_invariants:
        counts = compressed[1:] - compressed[:-1]
        if compressed[0].item() != 0 or (counts < 0).any().item() or compressed[-1].item() != plain.shape[0]:
            raise RuntimeError(f"{compressed_name} must start at 0, not decrease, and end at nnz")
    return _compressed(layout, compressed, plain, _own_values(values, requires_grad), size)


@composite(method=False, device_guard=False)
def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A sparse CSR matrix: row ``i``'s entries are ``values[crow_indices[i]:crow_indices[i + 1]]`` at the columns
    ``col_indices`` gives, as ``torch.sparse_csr_tensor`` (2-D; values may have dense dimensions).

        >>> agnostic.sparse_csr_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2)).to_dense()
        tensor([[0., 5.],
                [6., 0.]])
    """
    return _compressed_tensor(sparse_csr, crow_indices, col_indices, values, size, dtype, device, requires_grad,
                              check_invariants)


@composite(method=False, device_guard=False)
def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A sparse CSC matrix: column ``j``'s entries are ``values[ccol_indices[j]:ccol_indices[j + 1]]`` at the rows
    ``row_indices`` gives, as ``torch.sparse_csc_tensor``.

        >>> agnostic.sparse_csc_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2)).to_dense()
        tensor([[0., 6.],
                [5., 0.]])
    """
    return _compressed_tensor(sparse_csc, ccol_indices, row_indices, values, size, dtype, device, requires_grad,
                              check_invariants)


@composite(method=False, device_guard=False)
def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A block sparse matrix by rows: ``values`` of shape ``(nnz, block rows, block columns)``; block row ``i``'s
    blocks are ``values[crow_indices[i]:crow_indices[i + 1]]`` at the block columns ``col_indices`` gives, as
    ``torch.sparse_bsr_tensor``.

        >>> agnostic.sparse_bsr_tensor([0, 1], [1], [[[1.0], [2.0]]], (2, 2)).to_dense()
        tensor([[0., 1.],
                [0., 2.]])
    """
    return _compressed_tensor(sparse_bsr, crow_indices, col_indices, values, size, dtype, device, requires_grad,
                              check_invariants)


@composite(method=False, device_guard=False)
def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A block sparse matrix by columns: ``values`` of shape ``(nnz, block rows, block columns)``; block column
    ``j``'s blocks are ``values[ccol_indices[j]:ccol_indices[j + 1]]`` at the block rows ``row_indices`` gives, as
    ``torch.sparse_bsc_tensor``.

        >>> agnostic.sparse_bsc_tensor([0, 0, 1], [0], [[[1.0], [2.0]]], (2, 2)).to_dense()
        tensor([[0., 1.],
                [0., 2.]])
    """
    return _compressed_tensor(sparse_bsc, ccol_indices, row_indices, values, size, dtype, device, requires_grad,
                              check_invariants)


@composite(method=False, device_guard=False)
def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """A sparse CSR, CSC, BSR or BSC tensor (``layout``), as ``torch.sparse_compressed_tensor``.

        >>> agnostic.sparse_compressed_tensor([0, 1, 1], [0], [2.0], (2, 2), layout=agnostic.sparse_csr).to_dense()
        tensor([[2., 0.],
                [0., 0.]])
    """
    if layout not in _COMPRESSED:
        raise RuntimeError(f"sparse_compressed_tensor: layout must be agnostic.sparse_csr, sparse_csc, sparse_bsr or "
                           f"sparse_bsc, got {layout!r}")
    return _compressed_tensor(layout, compressed_indices, plain_indices, values, size, dtype, device,
                              requires_grad, check_invariants)


def _rebuild(layout_name, components, size):
    layout = {layout.name: layout for layout in (sparse_coo, *_COMPRESSED)}[layout_name]
    if layout is sparse_coo:
        return sparse_coo_tensor(*components, size)
    return sparse_compressed_tensor(*components, size, layout=layout)


# ----- index arithmetic -------------------------------------------------------------------------------------------
def _strides(sizes):
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return strides[::-1]


def _count(sizes):
    count = 1
    for size in sizes:
        count *= size
    return count


def _rows(dense, sparse_dim):
    """``dense`` as one row per element of its first ``sparse_dim`` dimensions (explicit sizes: some may be 0)."""
    return dense.reshape((_count(dense.shape[:sparse_dim]),) + tuple(dense.shape[sparse_dim:]))


def _linear(indices, sizes):
    """Each column of ``indices`` as one row-major number over ``sizes``."""
    if not sizes:
        return zeros(indices.shape[1], dtype=_dtypes.int64, device=indices.device)
    strides = make_tensor(_strides(sizes), dtype=_dtypes.int64, device=indices.device)
    return (indices * strides.reshape(-1, 1)).sum(0)


def _unravel(linear, sizes):
    if not sizes or linear.shape[0] == 0:  # (a size may be 0: no entries, and nothing to divide)
        return zeros((len(sizes), linear.shape[0]), dtype=_dtypes.int64, device=linear.device)
    return stack([(linear // stride) % size for stride, size in zip(_strides(sizes), sizes)])


def _coalesced(tensor):
    if tensor._coalesced:
        return tensor
    sizes = tensor._size[:tensor._sparse_dim]
    linear = _linear(tensor._index_tensor, sizes)
    kept, inverse = unique(linear, sorted=True, return_inverse=True)
    values = tensor._value_tensor
    summed = index_add(zeros((kept.shape[0],) + tuple(values.shape[1:]), dtype=values.dtype, device=values.device),
                       0, inverse, values)
    return _coo(_unravel(kept, sizes), summed, tensor._size, True)


def _as_coo(tensor):
    if tensor._layout is sparse_coo:
        return tensor
    compressed, plain, values = tensor._compressed, tensor._plain, tensor._value_tensor
    outer = arange(compressed.shape[0] - 1, device=compressed.device)
    expanded = repeat_interleave(outer, compressed[1:] - compressed[:-1])
    rows, columns = (expanded, plain) if tensor._layout in _ROW_MAJOR else (plain, expanded)
    if tensor._layout in _BLOCKED:  # each block's elements, at the block's place times its size plus their own
        block_rows, block_columns = values.shape[1], values.shape[2]
        within_rows = arange(block_rows, device=rows.device).reshape(1, -1, 1)
        within_columns = arange(block_columns, device=rows.device).reshape(1, 1, -1)
        every = (values.shape[0], block_rows, block_columns)
        rows = (rows.reshape(-1, 1, 1) * block_rows + within_rows).expand(*every).reshape(-1)
        columns = (columns.reshape(-1, 1, 1) * block_columns + within_columns).expand(*every).reshape(-1)
        values = values.reshape((-1,) + tuple(values.shape[3:]))
    return _coalesced(_coo(stack([rows, columns]), values, tensor._size, tensor._layout is sparse_csr))


def _convert(tensor, layout, blocksize):
    if layout is tensor._layout:
        return tensor
    if layout is not sparse_coo and layout not in _COMPRESSED:
        raise RuntimeError(f"conversion to {layout!r} is not supported; use agnostic.sparse_coo, sparse_csr, "
                           "sparse_csc, sparse_bsr or sparse_bsc")
    if layout in _BLOCKED and blocksize is None:
        raise RuntimeError(f"to_sparse_{layout.name[-3:]}: a blocksize (rows, columns) is required")
    coo = _as_coo(tensor)
    if layout is sparse_coo:
        return coo
    if coo._sparse_dim != 2:
        raise RuntimeError(f"to_sparse_{layout.name[-3:]}: expected a tensor with 2 sparse dimensions, got "
                           f"{coo._sparse_dim} (batched compressed tensors are not supported)")
    coo = _coalesced(coo)
    rows, columns = coo._index_tensor[0], coo._index_tensor[1]
    values = coo._value_tensor
    grid = coo._size[:2]
    if layout in _BLOCKED:
        rows, columns, values, grid = _blocks(coo, tuple(int(b) for b in blocksize))
    if layout in _ROW_MAJOR:
        outer, plain = rows, columns
    else:
        order = argsort(columns * grid[0] + rows)
        outer, plain, values = columns[order], rows[order], index_select(values, 0, order)
    extent = grid[0] if layout in _ROW_MAJOR else grid[1]
    counts = bincount(outer, minlength=extent)
    compressed = cat([zeros(1, dtype=_dtypes.int64, device=counts.device), cumsum(counts, 0)])
    return _compressed(layout, compressed, plain, values, coo._size)


def _blocks(coo, blocksize):
    """(block rows, block columns, blocks, block grid) of the blocks of ``blocksize`` that hold the coalesced 2-D
    ``coo``'s entries, in row-major order of the grid."""
    block_rows, block_columns = blocksize
    if len(blocksize) != 2 or coo._size[0] % block_rows or coo._size[1] % block_columns:
        raise RuntimeError(f"blocksize {blocksize} must be two sizes that divide the size {coo._size}")
    grid = (coo._size[0] // block_rows, coo._size[1] // block_columns)
    rows, columns = coo._index_tensor[0], coo._index_tensor[1]
    kept, inverse = unique((rows // block_rows) * grid[1] + columns // block_columns, sorted=True,
                           return_inverse=True)
    values = coo._value_tensor
    blocks = zeros((kept.shape[0], block_rows, block_columns) + tuple(values.shape[1:]), dtype=values.dtype,
                   device=values.device)
    blocks = blocks.index_put((inverse, rows % block_rows, columns % block_columns), values, accumulate=True)
    block_grid = _unravel(kept, grid)  # (a grid of no columns has no blocks, and nothing to divide)
    return block_grid[0], block_grid[1], blocks, grid


def _dense_to_sparse(input, layout, sparse_dim, blocksize=None):
    if layout is None or layout is sparse_coo:
        sparse_dim = input.ndim if sparse_dim is None else sparse_dim
        if not 0 <= sparse_dim <= input.ndim:
            raise RuntimeError(f"sparse_dim must be in [0, {input.ndim}], got {sparse_dim}")
        nonzero_mask = input != 0
        if sparse_dim < input.ndim:
            dense_count = _count(input.shape[sparse_dim:])
            nonzero_mask = nonzero_mask.reshape(tuple(input.shape[:sparse_dim]) + (dense_count,)).any(-1)
        indices = nonzero(nonzero_mask).t() if sparse_dim else zeros((0, 1), dtype=_dtypes.int64,
                                                                        device=input.device)
        flat = _rows(input, sparse_dim)
        values = index_select(flat, 0, _linear(indices, tuple(input.shape[:sparse_dim])))
        return _coo(indices, values, tuple(input.shape), True)
    return _convert(_dense_to_sparse(input, sparse_coo, None), layout, blocksize)


# ----- the dense forms of the Tensor methods sparse tensors override ----------------------------------------------
@tensor_method()
def to_sparse(input, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This dense tensor as a sparse one: COO with ``sparse_dim`` sparse dimensions (all by default), or ``layout``
    (``agnostic.sparse_csr``, ``agnostic.sparse_csc``); differentiable.

        >>> agnostic.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse().values()
        tensor([2., 3.])
    """
    if layout in _BLOCKED:
        _check_matrix(input, "to_sparse")
    return _dense_to_sparse(input, layout, sparse_dim, blocksize)


@tensor_method()
def to_sparse_coo(input):
    """This dense tensor in the COO layout (``to_sparse()``).

        >>> agnostic.tensor([0.0, 5.0]).to_sparse_coo().indices()
        tensor([[1]])
    """
    return _dense_to_sparse(input, sparse_coo, None)


@tensor_method()
def to_sparse_csr(input, dense_dim=None):
    """This dense matrix in the CSR layout.

        >>> agnostic.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
    """
    _check_matrix(input, "to_sparse_csr")
    return _dense_to_sparse(input, sparse_csr, None)


@tensor_method()
def to_sparse_csc(input, dense_dim=None):
    """This dense matrix in the CSC layout.

        >>> agnostic.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse_csc().row_indices()
        tensor([1, 0])
    """
    _check_matrix(input, "to_sparse_csc")
    return _dense_to_sparse(input, sparse_csc, None)


@tensor_method()
def to_sparse_bsr(input, blocksize, dense_dim=None):
    """This dense matrix in the BSR layout: the blocks of ``blocksize`` (rows, columns) holding a nonzero, by rows.

        >>> agnostic.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse_bsr((1, 1)).values()
        tensor([[[2.]]])
    """
    _check_matrix(input, "to_sparse_bsr")
    return _dense_to_sparse(input, sparse_bsr, None, blocksize)


@tensor_method()
def to_sparse_bsc(input, blocksize, dense_dim=None):
    """This dense matrix in the BSC layout: the blocks of ``blocksize`` (rows, columns) holding a nonzero, by columns.

        >>> agnostic.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse_bsc((2, 1)).ccol_indices()
        tensor([0, 0, 1])
    """
    _check_matrix(input, "to_sparse_bsc")
    return _dense_to_sparse(input, sparse_bsc, None, blocksize)


def _check_matrix(input, name):
    if input.ndim != 2:
        raise RuntimeError(f"{name}: expected a 2-D tensor, got {input.ndim}-D (batched compressed tensors are not "
                           "supported: use to_sparse())")


@tensor_method()
def to_dense(input, dtype=None, *, masked_grad=None):
    """The dense form: a dense tensor is returned as it is (cast to ``dtype`` if given).

        >>> agnostic.tensor([1.0]).to_dense()
        tensor([1.])
    """
    return input if dtype is None else input.to(dtype)


def _dense_refusal(name, layout, example, shown):
    def method(input, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse layout {layout!r} but got agnostic.strided; make a sparse tensor "
                           "first (to_sparse())")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"""A sparse tensor's {name.strip('_').replace('_', ' ')} (``torch.Tensor.{name}``); dense
    tensors are refused.

        >>> {example}
        {shown}
    """
    return method


# The methods only sparse tensors have (the sparse class answers them): a dense tensor's refuse, naming the layout.
_EXAMPLE = "agnostic.tensor([[0.0, 1.0]])"
for _refusing in (
        _dense_refusal("indices", sparse_coo, f"{_EXAMPLE}.to_sparse().indices()",
                       "tensor([[0],\n                [1]])"),
        _dense_refusal("values", sparse_coo, f"{_EXAMPLE}.to_sparse().values()", "tensor([1.])"),
        _dense_refusal("_indices", sparse_coo, f"{_EXAMPLE}.to_sparse()._indices().shape", "agnostic.Size([2, 1])"),
        _dense_refusal("_values", sparse_coo, f"{_EXAMPLE}.to_sparse()._values()", "tensor([1.])"),
        _dense_refusal("crow_indices", sparse_csr, f"{_EXAMPLE}.to_sparse_csr().crow_indices()", "tensor([0, 1])"),
        _dense_refusal("col_indices", sparse_csr, f"{_EXAMPLE}.to_sparse_csr().col_indices()", "tensor([1])"),
        _dense_refusal("ccol_indices", sparse_csc, f"{_EXAMPLE}.to_sparse_csc().ccol_indices()",
                       "tensor([0, 0, 1])"),
        _dense_refusal("row_indices", sparse_csc, f"{_EXAMPLE}.to_sparse_csc().row_indices()", "tensor([0])"),
        _dense_refusal("coalesce", sparse_coo, "agnostic.sparse_coo_tensor([[1, 1]], [2.0, 3.0], (2,)).coalesce()"
                       ".values()", "tensor([5.])"),
        _dense_refusal("is_coalesced", sparse_coo, "agnostic.sparse_coo_tensor([[1, 1]], [2.0, 3.0], (2,))"
                       ".is_coalesced()", "False"),
        _dense_refusal("sparse_resize_", sparse_coo, f"{_EXAMPLE}.to_sparse().sparse_resize_((3, 3), 2, 0).shape",
                       "agnostic.Size([3, 3])"),
        _dense_refusal("sparse_resize_and_clear_", sparse_coo, f"{_EXAMPLE}.to_sparse()"
                       ".sparse_resize_and_clear_((3, 3), 2, 0)._nnz()", "0")):
    tensor_method()(_refusing)
del _refusing


@tensor_method()
def sparse_dim(input):
    """The number of sparse dimensions: 0 for a dense tensor.

        >>> agnostic.ones(2).sparse_dim(), agnostic.ones(2, 3).to_sparse(1).sparse_dim()
        (0, 1)
    """
    return 0


@tensor_method()
def dense_dim(input):
    """The number of dense dimensions: all of a dense tensor's.

        >>> agnostic.ones(2, 3).dense_dim(), agnostic.ones(2, 3).to_sparse(1).dense_dim()
        (2, 1)
    """
    return input.ndim


@tensor_method()
def _nnz(input):
    """The number of stored values of a sparse tensor.

        >>> agnostic.tensor([[0., 2.], [3., 0.]]).to_sparse()._nnz()
        2
    """
    raise RuntimeError("_nnz() expects a sparse tensor, got a dense (agnostic.strided) one")


@tensor_method()
def sparse_mask(input, mask):
    """A sparse tensor with the indices of the sparse ``mask`` and this tensor's values at them.

        >>> mask = agnostic.sparse_coo_tensor([[1]], [1.0], (3,))
        >>> agnostic.tensor([7.0, 8.0, 9.0]).sparse_mask(mask).values()
        tensor([8.])
    """
    return _sparse_mask(input, mask)


def _sparse_mask(input, mask):
    if not isinstance(mask, SparseTensorMethods):
        raise RuntimeError("sparse_mask expects a sparse mask (to_sparse())")
    if tuple(input.shape) != mask._size:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(input.shape)} but "
                           f"mask has size {list(mask._size)}")
    layout = mask._layout
    coo = _coalesced(_as_coo(mask))
    if isinstance(input, SparseTensorMethods):
        values = _values_at(_coalesced(_as_coo(input)), coo)
    else:
        flat = _rows(input, coo._sparse_dim)
        values = index_select(flat, 0, _linear(coo._index_tensor, coo._size[:coo._sparse_dim]))
    return _convert(_coo(coo._index_tensor, values, coo._size, True), layout, _blocksize(mask))


def _values_at(source, target):
    """The values of coalesced COO ``source`` at coalesced ``target``'s indices (zero where ``source`` has none)."""
    sizes = source._size[:source._sparse_dim]
    mine, theirs = _linear(source._index_tensor, sizes), _linear(target._index_tensor, sizes)
    values = source._value_tensor
    if mine.shape[0] == 0:
        return zeros((theirs.shape[0],) + tuple(values.shape[1:]), dtype=values.dtype, device=values.device)
    position = searchsorted(mine, theirs).clamp(max=mine.shape[0] - 1)
    found = (index_select(mine, 0, position) == theirs).reshape((-1,) + (1,) * (values.ndim - 1))
    return index_select(values, 0, position) * found


# ----- arithmetic -------------------------------------------------------------------------------------------------
def _check_same_size(tensor, other, name):
    if tuple(other.shape) != tensor._size:
        raise RuntimeError(f"{name}: sparse tensors of different sizes ({list(tensor._size)} and "
                           f"{list(other.shape)}) are not supported; broadcast the dense form (.to_dense())")


def _add(tensor, other, alpha):
    if not isinstance(other, TensorBase):
        if other == 0:
            return tensor
        raise RuntimeError("adding a number to a sparse tensor would fill every element; add it to .to_dense()")
    _check_same_size(tensor, other, "add")
    if not isinstance(other, SparseTensorMethods):
        return other.add(tensor.to_dense(), alpha=alpha) if alpha == 1 else other + tensor.to_dense() * alpha
    layout = tensor._layout
    a, b = _as_coo(tensor), _as_coo(other)
    if a._sparse_dim != b._sparse_dim:
        raise RuntimeError("add: sparse tensors with different numbers of sparse dimensions are not supported")
    values_b = b._value_tensor if alpha == 1 else b._value_tensor * alpha
    made = _coo(cat([a._index_tensor, b._index_tensor], 1), cat([a._value_tensor, values_b]), a._size, False)
    if (a._coalesced and b._coalesced) or layout is not sparse_coo:
        made = _coalesced(made)
    return _convert(made, layout, _blocksize(tensor))


def _mul(tensor, other):
    if not isinstance(other, TensorBase) or (not isinstance(other, SparseTensorMethods) and other.ndim == 0):
        return _like(tensor, tensor._value_tensor * other)
    _check_same_size(tensor, other, "mul")
    coo = _coalesced(_as_coo(tensor))
    if isinstance(other, SparseTensorMethods):
        values = coo._value_tensor * _values_at(_coalesced(_as_coo(other)), coo)
    else:
        flat = _rows(other, coo._sparse_dim)
        values = coo._value_tensor * index_select(flat, 0, _linear(coo._index_tensor, coo._size[:coo._sparse_dim]))
    return _convert(_coo(coo._index_tensor, values, coo._size, True), tensor._layout, _blocksize(tensor))


def _sum(tensor, dim, dtype):
    coo = _as_coo(tensor)
    values = coo._value_tensor if dtype is None else coo._value_tensor.to(dtype)
    if dim is None:
        return values.sum()
    dims = sorted({_normalize_dim(d, len(coo._size)) for d in ((dim,) if isinstance(dim, int) else dim)})
    sparse_dims = [d for d in dims if d < coo._sparse_dim]
    dense_dims = [d - coo._sparse_dim + 1 for d in dims if d >= coo._sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims)
    kept = [d for d in range(coo._sparse_dim) if d not in sparse_dims]
    if not kept:
        return values.sum(0)
    size = tuple(s for d, s in enumerate(coo._size) if d not in dims)
    rows = make_tensor(kept, dtype=_dtypes.int64, device=coo._device)
    return _coalesced(_coo(index_select(coo._index_tensor, 0, rows), values, size, False))


def _transpose(tensor, dim0, dim1):
    coo = _as_coo(tensor)
    dim0, dim1 = _normalize_dim(dim0, len(coo._size)), _normalize_dim(dim1, len(coo._size))
    if dim0 == dim1:
        return tensor
    if tensor._layout in _BLOCKED:
        raise RuntimeError("transpose of a block sparse tensor is not supported; convert it with to_sparse_coo()")
    if max(dim0, dim1) >= coo._sparse_dim:
        raise RuntimeError("transpose of a dense dimension of a sparse tensor is not supported; use .to_dense()")
    order = list(range(len(coo._size)))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    rows = make_tensor(order[:coo._sparse_dim], dtype=_dtypes.int64, device=coo._device)
    made = _coo(index_select(coo._index_tensor, 0, rows), coo._value_tensor, tuple(coo._size[d] for d in order), False)
    if tensor._layout is sparse_coo:
        return made
    flipped = {sparse_csr: sparse_csc, sparse_csc: sparse_csr}[tensor._layout]
    return _convert(made, flipped, None)


# ----- products -------------------------------------------------------------------------------------------------
def _matmul(tensor, other, name):
    if isinstance(other, SparseTensorMethods):
        other = other.to_dense()  # sparse @ sparse: the product of the dense forms has the same values
        return _matmul(tensor, other, name).to_sparse()
    if not isinstance(other, TensorBase):
        raise TypeError(f"{name}(): argument 'mat2' must be a Tensor, not {type(other).__name__}")
    coo = _as_coo(tensor)
    if len(coo._size) != 2 or coo._sparse_dim != 2:
        raise RuntimeError(f"{name}: sparse products need a 2-D sparse matrix (2 sparse dimensions, no dense "
                           f"ones), got size {list(coo._size)} with {coo._sparse_dim} sparse dimensions")
    vector = other.ndim == 1 and name == "matmul"
    if other.ndim != 2 and not vector:
        raise RuntimeError(f"{name}: expected a 2-D dense matrix, got {other.ndim}-D")
    if other.shape[0] != coo._size[1]:
        raise RuntimeError(f"{name}: mat1 and mat2 shapes cannot be multiplied ({coo._size[0]}x{coo._size[1]} and "
                           f"{'x'.join(str(s) for s in other.shape)})")
    if other.dtype is not coo.dtype:
        raise RuntimeError(f"{name}: expected mat1 and mat2 to have the same dtype, but got: {coo.dtype} != "
                           f"{other.dtype}")
    if other.device != coo.device:
        raise RuntimeError(f"{name}: expected all tensors to be on the same device, but found at least two devices, "
                           f"{coo.device} and {other.device}")
    rows, columns = coo._index_tensor[0], coo._index_tensor[1]
    picked = index_select(other, 0, columns)
    values = coo._value_tensor if vector else coo._value_tensor.reshape(-1, 1)
    out = zeros((coo._size[0],) + tuple(other.shape[1:]), dtype=other.dtype, device=other.device)
    return index_add(out, 0, rows, picked * values)


@composite(method=False)
def spmm(input, mat2):
    """The product of a sparse matrix and a dense one (dense result), PyTorch's legacy name of
    ``agnostic.sparse.mm``.

        >>> agnostic.spmm(agnostic.eye(2).to_sparse(), agnostic.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    return _matmul(_sparse_operand(input, "spmm"), mat2, "spmm")


@composite(method=False)
def dsmm(input, mat2):
    """The product of a sparse matrix and a dense one, as a dense tensor (PyTorch's legacy ``dsmm``).

        >>> agnostic.dsmm(agnostic.eye(2).to_sparse(), agnostic.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    return _matmul(_sparse_operand(input, "dsmm"), mat2, "dsmm")


def _sparse_operand(value, name):
    if not isinstance(value, SparseTensorMethods):
        raise RuntimeError(f"{name}: expected a sparse matrix as the first argument (to_sparse()), got a dense one")
    return value


@composite(method=False)
def hspmm(mat1, mat2):
    """The product of a sparse COO matrix and a dense one as a hybrid COO tensor: one sparse dimension (the rows of
    ``mat1`` with entries) and dense rows, as ``torch.hspmm``.

        >>> agnostic.hspmm(agnostic.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse(), agnostic.ones(2, 2)).values()
        tensor([[2., 2.]])
    """
    coo = _coalesced(_as_coo(_sparse_operand(mat1, "hspmm")))
    dense = _matmul(coo, mat2, "hspmm")
    rows = unique(coo._index_tensor[0], sorted=True) if coo._value_tensor.shape[0] else coo._index_tensor[0]
    return _coo(rows.reshape(1, -1), index_select(dense, 0, rows), tuple(dense.shape), True)


@composite()
def smm(input, mat):
    """The product of a sparse COO matrix and a dense one as a sparse COO matrix (every column of the rows of
    ``input`` with entries), as ``torch.smm``.

        >>> agnostic.smm(agnostic.tensor([[0.0, 2.0], [0.0, 0.0]]).to_sparse(), agnostic.ones(2, 2)).values()
        tensor([2., 2.])
    """
    hybrid = hspmm(input, mat)
    rows, values = hybrid._index_tensor[0], hybrid._value_tensor
    columns = values.shape[1]
    indices = stack([repeat_interleave(rows, columns), arange(columns, device=rows.device).repeat(rows.shape[0])])
    return _coo(indices, values.reshape(-1), hybrid._size, True)


@composite()
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` as a sparse COO matrix, ``input`` and ``mat1`` sparse, as
    ``torch.sspaddmm`` (its entries those of ``input`` followed by those of the product; uncoalesced).

        >>> s = agnostic.eye(2).to_sparse()
        >>> agnostic.sspaddmm(s, s, agnostic.ones(2, 2)).to_dense()
        tensor([[2., 1.],
                [1., 2.]])
    """
    base = _as_coo(_sparse_operand(input, "sspaddmm"))
    product = smm(mat1, mat2)
    values = cat([base._value_tensor * beta, product._value_tensor * alpha])
    return _coo(cat([base._index_tensor, product._index_tensor], 1), values, base._size, False)


@composite(method=False)
def saddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` with ``mat1`` sparse, as a sparse tensor (PyTorch's legacy
    ``saddmm``, the same as ``sspaddmm``).

        >>> s = agnostic.eye(2).to_sparse()
        >>> agnostic.saddmm(s, s, agnostic.ones(2, 2)).to_dense()
        tensor([[2., 1.],
                [1., 2.]])
    """
    return sspaddmm(input, mat1, mat2, beta=beta, alpha=alpha)


def _repr_of(component, prefix):
    """A component as PyTorch prints it inside a sparse tensor: its values only, wrapped and aligned after
    ``prefix``."""
    array = component.detach()._host_array()
    if array.size == 0:
        return f"tensor([], size={tuple(array.shape)})"
    if array.dtype.kind == "V" or component.dtype is _dtypes.bfloat16:
        array = array.astype(numpy.float32)
    options = get_printoptions()
    body = numpy.array2string(array, separator=", ", prefix=prefix + "tensor(", formatter=_formatter(array),
                              threshold=min(options["threshold"], sys.maxsize), edgeitems=options["edgeitems"],
                              max_line_width=options["linewidth"]).replace(", ..., ", ",  ..., ")
    return f"tensor({body})"


def _sparse_repr(tensor):
    """PyTorch's printed form of a sparse tensor (``agnostic.`` where PyTorch prints ``torch.``)."""
    indent = " " * len("tensor(")
    if tensor._layout is sparse_coo:
        names = ("indices",)
        components = (tensor._index_tensor,)
    else:
        names = _COMPRESSED[tensor._layout]
        components = (tensor._compressed, tensor._plain)
    parts = []
    for position, (name, component) in enumerate(zip(names + ("values",), components + (tensor._value_tensor,))):
        prefix = ("tensor(" if position == 0 else indent) + name + "="
        parts.append(prefix + _repr_of(component, prefix))
    text = ",\n".join(parts)
    suffixes = [f"size={tuple(tensor._size)}", f"nnz={tensor._value_tensor.shape[0]}"]
    if tensor.dtype is not _dtypes.get_default_dtype():
        suffixes.append(f"dtype={tensor.dtype!r}")
    suffixes.append(f"layout={tensor._layout!r}")
    if tensor._value_tensor.grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor._value_tensor.grad_fn.name()}>")
    elif tensor._value_tensor.requires_grad:
        suffixes.append("requires_grad=True")
    force_newline = tensor._layout is sparse_coo
    line_length = len(text) - text.rfind("\n") - 1
    for suffix in suffixes:
        if force_newline or line_length + len(suffix) + 2 > 80:
            text += ",\n" + indent + suffix
            line_length = len(indent) + len(suffix)
            force_newline = False
        else:
            text += ", " + suffix
            line_length += len(suffix) + 2
    return text + ")"


__all__ = public_names(globals()) + ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]
