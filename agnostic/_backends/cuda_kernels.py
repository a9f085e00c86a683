"""Every CUDA kernel agnostic launches: its source and how CuPy builds it, declared under a name. ``kernel(name,
dtype)`` gives the CuPy kernel, compiled on first use and kept in one cache; ``declaration(name, dtype)`` gives its
``Kernel`` (kind, source, parameters, options) without CuPy; ``declared_kernels()`` lists them all.

One place, so that all device code is read and reviewed together, is built and cached one way, and can be given to
another backend without a search through the library. The modules that launch the kernels keep the host side: which
kernel, on which arrays, with which launch configuration. CuPy is reached through ``require_cupy()`` when a kernel is
first asked for, never at import.
"""

import functools

import numpy

from . import cupy_loader

_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
_C_TYPES = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double"}


class Kernel:
    """How CuPy builds one kernel. ``kind`` is ``"elementwise"`` (a ``cupy.ElementwiseKernel`` named ``name`` with
    ``in_params`` and ``out_params``, ``source`` being its per-element operation), ``"reduction"`` (a
    ``cupy.ReductionKernel``: ``source`` maps each element, ``reduction`` (``reduce_expr``, ``post_map_expr``,
    ``identity`` and ``reduce_type``) says how the mapped values combine), ``"raw"`` (a ``cupy.RawKernel``: the
    ``extern "C"`` function ``name`` of ``source``) or ``"module"`` (the function ``name`` of a ``cupy.RawModule``
    of ``source``; with ``template`` true, ``name`` is a C++ name expression such as ``f<float>``); ``options`` go
    to the compiler, and an elementwise kernel's ``preamble`` (device functions) goes before it."""

    KINDS = ("elementwise", "reduction", "raw", "module")

    def __init__(self, kind, name, source, *, in_params=None, out_params=None, options=(), template=False,
                 preamble="", reduction=None):
        if kind not in self.KINDS:
            raise ValueError(f"unknown kernel kind {kind!r}: expected one of {self.KINDS}")
        self.kind, self.name, self.source = kind, name, source
        self.in_params, self.out_params = in_params, out_params
        self.options, self.template, self.preamble = options, template, preamble
        self.reduction = reduction

    def build(self, cupy):
        """The CuPy kernel object; CuPy compiles it when it is first called (a module's function: when taken from
        the module) on each device, and an ElementwiseKernel again for each new combination of argument dtypes."""
        if self.kind == "elementwise":
            return cupy.ElementwiseKernel(self.in_params, self.out_params, self.source, self.name,
                                          preamble=self.preamble)
        if self.kind == "reduction":
            return cupy.ReductionKernel(self.in_params, self.out_params, self.source, name=self.name,
                                        preamble=self.preamble, **self.reduction)
        if self.kind == "raw":
            return cupy.RawKernel(self.source, self.name, self.options)
        module = cupy.RawModule(code=self.source, options=self.options,
                                name_expressions=[self.name] if self.template else None)
        return module.get_function(self.name)


# ----- lookup ------------------------------------------------------------------------------------------------------
_declarations: dict = {}  # kernel name -> (the dtypes it is written for, or None; the function that declares it)
# The one cache, keyed by (kernel name, dtype or None). No device in the key: every object kept is a RawKernel
# (RawModule.get_function returns one too) or an ElementwiseKernel, and CuPy keeps their binaries per device itself,
# compiling or loading them on each device where they are first called.
_compiled: dict = {}


def kernel(name, dtype=None):
    """The CuPy kernel ``name``, built on first use and then kept. ``dtype`` (a ``numpy.dtype``, as ``array.dtype``
    is) picks the instance of a kernel whose source is written per dtype; it is None for the others, which CuPy
    specializes for their arguments' dtypes itself."""
    key = (name, dtype)
    found = _compiled.get(key)
    if found is None:
        found = _compiled[key] = declaration(name, dtype).build(cupy_loader.require_cupy())
    return found


def declaration(name, dtype=None):
    """The ``Kernel`` declared as ``name`` (for ``dtype``, where its source is written per dtype); needs no CuPy."""
    if name not in _declarations:
        raise KeyError(f"no CUDA kernel is declared as {name!r}; declared: {sorted(_declarations)}")
    dtypes, declare = _declarations[name]
    if dtypes is None:
        if dtype is not None:
            raise ValueError(f"the CUDA kernel {name!r} is one for every dtype: look it up without one")
        return declare()
    if not isinstance(dtype, numpy.dtype) or dtype not in dtypes:
        raise ValueError(f"the CUDA kernel {name!r} is written for the dtypes {[d.name for d in dtypes]}, "
                         f"given as numpy.dtype objects; got {dtype!r}")
    return declare(dtype)


def declared_kernels():
    """Every kernel that ``kernel`` can build, as ``(name, dtype)`` pairs (``dtype`` None where it takes none)."""
    return [(name, dtype) for name, (dtypes, _) in _declarations.items() for dtype in (dtypes or (None,))]


def _declares(name, dtypes=None):
    """Register the decorated function as the declaration of kernel ``name``; it takes the dtype when ``dtypes``
    lists the dtypes that its source is written for."""
    def register(declare):
        _declarations[name] = (None if dtypes is None else tuple(dtypes), declare)
        return declare
    return register


def _template(name, source, *arguments):
    """The declaration, for a dtype, of the instance ``name<T, arguments...>`` of the C++ template ``name`` in
    ``source``: ``T`` is the dtype's C type; an argument may be a function of the dtype."""
    def declare(dtype):
        values = [_C_TYPES[dtype]] + [str(argument(dtype) if callable(argument) else argument)
                                      for argument in arguments]
        return Kernel("module", f"{name}<{', '.join(values)}>", source, options=("-std=c++14",), template=True)
    return declare


# ----- relu's gradient (agnostic.ops._relu_gradient) ---------------------------------------------------------------
@_declares("agnostic_relu_gradient")
def _relu_gradient():
    return Kernel("elementwise", "agnostic_relu_gradient", "y = x > (T)0 ? g : (T)0",
                  in_params="T x, T g", out_params="T y")


# ----- PyTorch's divisions, one kernel each (agnostic.ops._division, launched by cuda_ops) ----------------------------
# Each float kernel is the step-by-step formula of its ``_division`` function, every step the operation of the CuPy
# ufunc that the formula would launch for it, rounded to the dtype as that ufunc rounds it: the same bits as the
# formula, in one pass. The steps are explicit _rn operations, so that the compiler fuses none of them into a
# multiply-add; float16 computes each step in float and rounds it back, as CuPy's float16 ufuncs do (exact for one
# + - * / of two float16 values). Comparisons and fmod/floor/trunc/copysign are the ufuncs' own calls, so CuPy's
# -ftz=true flushes the same float32 subnormals here as there.
DIVISION_FLOATS = tuple(numpy.dtype(name) for name in ("float16", "float32", "float64"))
DIVISION_INTEGERS = tuple(numpy.dtype(name) for name in ("uint8", "int8", "int16", "int32", "int64"))
DIVISION_COMPLEX = (numpy.dtype(numpy.complex64), numpy.dtype(numpy.complex128))

_FLOAT_STEPS = r"""
typedef {compute} C;
__device__ __forceinline__ C agnostic_round(C x) {{ return {round}; }}
__device__ __forceinline__ C agnostic_add(C x, C y) {{ return agnostic_round(__{p}add_rn(x, y)); }}
__device__ __forceinline__ C agnostic_sub(C x, C y) {{ return agnostic_round(__{p}sub_rn(x, y)); }}
__device__ __forceinline__ C agnostic_mul(C x, C y) {{ return agnostic_round(__{p}mul_rn(x, y)); }}
__device__ __forceinline__ C agnostic_div(C x, C y) {{ return agnostic_round(__{p}div_rn(x, y)); }}
"""
_FLOAT_STEP_TYPES = {  # dtype -> compute type, rounding to the dtype, intrinsic prefix, C math function suffix
    "float16": ("float", "(float)float16(x)", "f", "f"),
    "float32": ("float", "x", "f", "f"),
    "float64": ("double", "x", "d", ""),
    "complex64": ("float", "x", "f", "f"),
    "complex128": ("double", "x", "d", ""),
}

_FLOAT_DIVISIONS = {
    # (a - fmod(a, b)) / b, one lower where fmod and b differ in sign, snapped to the nearest integer; a zero
    # quotient takes the sign of a / b, and b == 0 gives a / b (divided only there: a division costs). The add and
    # the subtract of a bool are the formula's, done whatever its value (under -ftz, q - 0 is not always q).
    "floor_divide": """
        const C x = (C)a, y = (C)b;
        const C mod = fmod{f}(x, y);
        C quotient = agnostic_div(agnostic_sub(x, mod), y);
        quotient = agnostic_sub(quotient, (C)((mod != (C)0) & ((y < (C)0) != (mod < (C)0))));
        C floored = floor{f}(quotient);
        floored = agnostic_add(floored, (C)(agnostic_sub(quotient, floored) > (C)0.5));
        if (quotient == (C)0) floored = copysign{f}((C)0, agnostic_div(x, y));
        if (y == (C)0) floored = agnostic_div(x, y);
        out = (T)floored;
        """,
    "remainder": """
        const C x = (C)a, y = (C)b;
        C mod = fmod{f}(x, y);
        const C shifted = agnostic_add(mod, y);
        if ((mod != (C)0) & ((y < (C)0) != (mod < (C)0))) mod = shifted;
        out = (T)mod;
        """,
    "fmod": "out = (T)fmod{f}((C)a, (C)b);",
    "trunc_divide": "out = (T)trunc{f}(agnostic_div((C)a, (C)b));",
}

# Integers: C's truncated / and %, with the floored forms derived from them. A zero divisor (which callers refuse)
# gives what the formula gives, a for the quotients and 0 for the remainders; -1 is answered without dividing, as
# INT_MIN / -1 overflows: the quotient is -a, wrapping at INT_MIN.
_NEGATED = "(T)(0ULL - (unsigned long long)a)"
_SIGNED_DIVISIONS = {
    "floor_divide": f"""
        if (b == (T)0) {{
            out = a;
        }} else if (b == (T)-1) {{
            out = {_NEGATED};
        }} else {{
            const T quotient = a / b;
            out = (a % b != 0 && (a < 0) != (b < 0)) ? (T)(quotient - 1) : quotient;
        }}
        """,
    "remainder": """
        if (b == (T)0 || b == (T)-1) {
            out = 0;
        } else {
            const T mod = a % b;
            out = (mod != 0 && (mod < 0) != (b < 0)) ? (T)(mod + b) : mod;
        }
        """,
    "fmod": "out = (b == (T)0 || b == (T)-1) ? (T)0 : (T)(a % b);",
    "trunc_divide": f"out = b == (T)0 ? a : b == (T)-1 ? {_NEGATED} : (T)(a / b);",
}
_UNSIGNED_DIVISIONS = {
    "floor_divide": "out = b == (T)0 ? a : (T)(a / b);",
    "remainder": "out = b == (T)0 ? (T)0 : (T)(a % b);",
    "fmod": "out = b == (T)0 ? (T)0 : (T)(a % b);",
    "trunc_divide": "out = b == (T)0 ? a : (T)(a / b);",
}


def _division(name):
    def declare(dtype):
        if dtype.kind == "f":
            compute, round_, prefix, suffix = _FLOAT_STEP_TYPES[dtype.name]
            preamble = _FLOAT_STEPS.format(compute=compute, round=round_, p=prefix)
            source = _FLOAT_DIVISIONS[name].replace("{f}", suffix)
        else:
            preamble = ""
            source = (_SIGNED_DIVISIONS if dtype.kind == "i" else _UNSIGNED_DIVISIONS)[name]
        return Kernel("elementwise", f"agnostic_{name}_{dtype.name}", source, in_params="T a, T b",
                      out_params="T out", preamble=preamble)
    return declare


for _name in ("floor_divide", "remainder", "fmod", "trunc_divide"):
    _declares(f"agnostic_{_name}", DIVISION_FLOATS + DIVISION_INTEGERS)(_division(_name))

# Smith's algorithm, the branch that the formula's where() picks, each product and sum rounded on its own.
_COMPLEX_DIVIDE = """
    const C ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    C real, imag;
    if (fabs{f}(br) >= fabs{f}(bi)) {
        const C ratio = agnostic_div(bi, br);
        const C scale = agnostic_div((C)1, agnostic_add(br, agnostic_mul(bi, ratio)));
        real = agnostic_mul(agnostic_add(ar, agnostic_mul(ai, ratio)), scale);
        imag = agnostic_mul(agnostic_sub(ai, agnostic_mul(ar, ratio)), scale);
    } else {
        const C ratio = agnostic_div(br, bi);
        const C scale = agnostic_div((C)1, agnostic_add(bi, agnostic_mul(br, ratio)));
        real = agnostic_mul(agnostic_add(agnostic_mul(ar, ratio), ai), scale);
        imag = agnostic_mul(agnostic_sub(agnostic_mul(ai, ratio), ar), scale);
    }
    if ((br == (C)0) & (bi == (C)0)) {
        real = agnostic_div(ar, fabs{f}(br));
        imag = agnostic_div(ai, fabs{f}(bi));
    }
    out = T(real, imag);
    """


@_declares("agnostic_complex_divide", DIVISION_COMPLEX)
def _complex_divide(dtype):
    compute, round_, prefix, suffix = _FLOAT_STEP_TYPES[dtype.name]
    return Kernel("elementwise", f"agnostic_complex_divide_{dtype.name}", _COMPLEX_DIVIDE.replace("{f}", suffix),
                  in_params="T a, T b", out_params="T out",
                  preamble=_FLOAT_STEPS.format(compute=compute, round=round_, p=prefix))


# ----- PyTorch's conversions where CuPy's astype differs (agnostic._conversion, launched by cuda_ops.convert) -------
CONVERSION_INTEGERS = tuple(numpy.dtype(name) for name in ("uint8", "int8", "int16", "int32", "int64"))
_INTERMEDIATE = {"uint8": "long long", "int64": "long long", "int8": "int", "int16": "int", "int32": "int"}


@_declares("agnostic_float_to_integer", CONVERSION_INTEGERS)
def _float_to_integer(dtype):
    # A float16, float32 or float64 value is exact in double; in range it truncates to the intermediate integer,
    # which wraps to the target; anything else (NaN too: every comparison is false) is the intermediate's minimum.
    wide = _INTERMEDIATE[dtype.name]
    bound = "9223372036854775808.0" if wide == "long long" else "2147483648.0"
    source = (f"const double v = (double)x; "
              f"y = (v >= -{bound} && v < {bound}) ? ({wide})v : ({wide})(-{bound});")
    return Kernel("elementwise", f"agnostic_float_to_{dtype.name}", source, in_params="T x",
                  out_params=f"{dtype.name} y")


@_declares("agnostic_float64_to_float16")
def _float64_to_float16():
    return Kernel("elementwise", "agnostic_float64_to_float16", "y = float16((float)x);", in_params="float64 x",
                  out_params="float16 y")


# ----- cross-entropy of class indices (agnostic.nn.functional._index_cross_entropy) --------------------------------
CROSS_ENTROPY_TOTAL_THREADS = 256  # the block of agnostic_cross_entropy_total: its shared arrays have this size
_CROSS_ENTROPY_FORWARD_SOURCE = r"""
// One row, by a whole warp: stores its log-sum-exp; returns (to every lane) its loss, 0 when the label is ignored
// or out of bounds, and its flag: 0 ignored, 1 kept, 2 out of bounds.
__device__ {T} agnostic_cross_entropy_row_{T}(
        const {T}* logits, const long long* labels, const long long row, const long long classes,
        const long long ignore_index, {T}* log_sum_exp, int* flag) {{
    const int lane = threadIdx.x & 31;
    const {T}* x = logits + row * classes;
    {T} high = x[0];
    for (long long j = lane; j < classes; j += 32) high = {MAX}(high, x[j]);
    for (int offset = 16; offset; offset >>= 1) high = {MAX}(high, __shfl_xor_sync(0xffffffffu, high, offset));
    {T} sum = 0;
    for (long long j = lane; j < classes; j += 32) sum += {EXP}(x[j] - high);
    for (int offset = 16; offset; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const {T} lse = high + {LOG}(sum);
    const long long label = labels[row];
    const bool kept = label != ignore_index;
    const bool bad = kept && (label < 0 || label >= classes);
    if (lane == 0) log_sum_exp[row] = lse;
    *flag = bad ? 2 : (kept ? 1 : 0);
    return (kept && !bad) ? lse - x[label] : ({T})0;
}}

extern "C" __global__ void agnostic_cross_entropy_rows_{T}(
        const {T}* logits, const long long* labels, const long long rows, const long long classes,
        const long long ignore_index, {T}* log_sum_exp, {T}* losses, int* flags) {{
    const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warps: every lane of a warp has the same row
    int flag;
    const {T} loss = agnostic_cross_entropy_row_{T}(logits, labels, row, classes, ignore_index, log_sum_exp, &flag);
    if ((threadIdx.x & 31) == 0) {{
        losses[row] = loss;
        flags[row] = flag;
    }}
}}

extern "C" __global__ void agnostic_cross_entropy_total_{T}(
        const {T}* losses, const int* flags, const long long rows, const int mean, {T}* totals) {{
    __shared__ {T} sums[{THREADS}];
    __shared__ {T} counts[{THREADS}];
    __shared__ int bads[{THREADS}];
    const int t = threadIdx.x;
    {T} sum = 0, kept = 0;
    int any_bad = 0;
    for (long long i = t; i < rows; i += blockDim.x) {{
        sum += losses[i];
        kept += flags[i] == 1;
        any_bad |= flags[i] == 2;
    }}
    sums[t] = sum; counts[t] = kept; bads[t] = any_bad;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride; stride >>= 1) {{  // a fixed order: the same sum on every run
        if (t < stride) {{
            sums[t] += sums[t + stride]; counts[t] += counts[t + stride]; bads[t] |= bads[t + stride];
        }}
        __syncthreads();
    }}
    if (t == 0) {{
        totals[0] = mean ? sums[0] / counts[0] : sums[0];
        totals[1] = counts[0];
        totals[2] = bads[0];
    }}
}}

extern "C" __global__ void agnostic_cross_entropy_block_{T}(
        const {T}* logits, const long long* labels, const long long rows, const long long classes,
        const long long ignore_index, const int mean, {T}* log_sum_exp, {T}* totals) {{
    // Few rows: one block, a warp per row in turn; each warp's lane 0 adds its rows' losses in order, then
    // thread 0 adds the warps' sums in order (the same sum on every run).
    __shared__ {T} sums[32];
    __shared__ {T} counts[32];
    __shared__ int bads[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    {T} sum = 0, kept_rows = 0;
    int any_bad = 0;
    for (long long row = warp; row < rows; row += warps) {{
        int flag;
        sum += agnostic_cross_entropy_row_{T}(logits, labels, row, classes, ignore_index, log_sum_exp, &flag);
        kept_rows += flag == 1;
        any_bad |= flag == 2;
    }}
    if (lane == 0) {{
        sums[warp] = sum; counts[warp] = kept_rows; bads[warp] = any_bad;
    }}
    __syncthreads();
    if (threadIdx.x == 0) {{
        {T} s = 0, c = 0;
        int b = 0;
        for (int w = 0; w < warps; ++w) {{
            s += sums[w]; c += counts[w]; b |= bads[w];
        }}
        totals[0] = mean ? s / c : s;
        totals[1] = c;
        totals[2] = b;
    }}
}}
"""


def _cross_entropy_forward(part):
    def declare(dtype):
        type_name, suffix = {"float32": ("float", "f"), "float64": ("double", "")}[dtype.name]
        source = _CROSS_ENTROPY_FORWARD_SOURCE.format(T=type_name, THREADS=CROSS_ENTROPY_TOTAL_THREADS,
                                                      MAX="fmax" + suffix, EXP="exp" + suffix, LOG="log" + suffix)
        return Kernel("module", f"agnostic_cross_entropy_{part}_{type_name}", source)
    return declare


for _part in ("block", "rows", "total"):
    _declares(f"agnostic_cross_entropy_{_part}", _FLOATS)(_cross_entropy_forward(_part))


@_declares("agnostic_cross_entropy_backward")
def _cross_entropy_backward():
    return Kernel(
        "elementwise", "agnostic_cross_entropy_backward",
        in_params="T logit, int64 label, T log_sum_exp, T grad, T count, int64 classes, int64 ignore_index, int32 mean",
        out_params="T gradient",
        source="""
            if (label == ignore_index) {
                gradient = (T)0;
            } else {
                const T scale = mean ? grad / count : grad;
                gradient = (exp(logit - log_sum_exp) - (T)((i % classes) == label)) * scale;
            }
            """)


# ----- column sums (agnostic.nn.functional._column_sums) -----------------------------------------------------------
_COLUMN_SUMS_SOURCE = r"""
template <typename T>
__global__ void agnostic_column_sums(const T* rows, T* out, long long n_rows, long long n_cols) {
    __shared__ T partial[32][33];
    long long col = (long long)blockIdx.x * 32 + threadIdx.x;
    T total = 0;
    if (col < n_cols) {
        for (long long row = threadIdx.y; row < n_rows; row += 32) total += rows[row * n_cols + col];
    }
    partial[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    if (threadIdx.y == 0 && col < n_cols) {
        T sum = 0;
        for (int i = 0; i < 32; ++i) sum += partial[i][threadIdx.x];
        out[col] = sum;
    }
}
"""


_declares("agnostic_column_sums", _FLOATS)(_template("agnostic_column_sums", _COLUMN_SUMS_SOURCE))


# ----- a small array's sum or mean (cuda_ops.whole_reduction) -----------------------------------------------------
# One block: each thread adds every blockDim-th element into four running sums, the block's threads then add theirs
# by warp shuffles (a fixed order: the same bits on every run). CuPy's own sum goes through CUB, which allocates a
# scratch buffer on every call; a mean adds a division kernel. ``divisor`` is 1 for a sum (exact) and the count for a
# mean, which is the sum divided by the count in the dtype, as CuPy's and NumPy's means compute it.
WHOLE_REDUCTION_THREADS = 512
_WHOLE_SUM_SOURCE = r"""
template <typename T>
__global__ void agnostic_whole_sum(const T* x, T* out, long long n, long long divisor) {
    __shared__ T partial[32];
    const long long stride = blockDim.x;
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    long long i = threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        s0 += x[i];
        s1 += x[i + stride];
        s2 += x[i + 2 * stride];
        s3 += x[i + 3 * stride];
    }
    for (; i < n; i += stride) s0 += x[i];
    T s = (s0 + s1) + (s2 + s3);
    for (int offset = 16; offset; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : (T)0;
        for (int offset = 16; offset; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
        if (threadIdx.x == 0) *out = s / (T)divisor;
    }
}
"""


_declares("agnostic_whole_sum", _FLOATS)(_template("agnostic_whole_sum", _WHOLE_SUM_SOURCE))


# ----- matrix products inside a CUDA graph capture (agnostic.cuda.graphs) -------------------------------------------
# CuPy refuses cuBLAS calls while a stream captures, so a captured ``a @ b`` is computed by agnostic's own kernels.
# Float32 and float64 matrices use a tiled product (half precision is computed in float32 and rounded once, as
# cuBLAS accumulates it), by one of two tiled kernels. Both step through the shared dimension 16 at a time with both
# operands' tiles in shared memory, and each element's sum runs over the shared dimension in order (the two give the
# same bits). ``agnostic_tiled_matmul``: each 16x16 block of threads computes a 16x16 tile of the result, an element a
# thread (small products: many blocks). ``agnostic_blocked_matmul``: each block of 16x16 threads computes a 64x64
# tile, each thread a 4x4 grid of it (rows ty + 16i, columns tx + 16j: register blocking, four times the arithmetic
# per shared-memory read; large products, 3x faster there). Operands are read through their element strides, so
# transposed views need no copy; ``blockIdx.z`` picks the matrix of a batch and a chunk of the shared dimension
# ("split-K", so that small products still occupy the GPU), each chunk's partial sums going to a plane of ``c`` that
# the host adds up (in the same dtype). Other dtypes (integers, complex) use a reduction over the shared dimension,
# the operands broadcast as ``a[..., :, :, None]`` and ``b[..., None, :, :]`` (views).
_TILED_MATMUL_SOURCE = r"""
template <typename T>
__global__ void agnostic_tiled_matmul(const T* a, const T* b, T* c, int m, int n, int k, int k_chunk, int splits,
                                      long long a_batch, long long a_row, long long a_col,
                                      long long b_batch, long long b_row, long long b_col) {
    const int tile = 16;
    __shared__ T a_tile[16][17];
    __shared__ T b_tile[16][17];
    int matrix = blockIdx.z / splits, split = blockIdx.z % splits;
    int row = blockIdx.y * tile + threadIdx.y, column = blockIdx.x * tile + threadIdx.x;
    int k_begin = split * k_chunk, k_end = min(k, k_begin + k_chunk);
    const T* a_matrix = a + matrix * a_batch;
    const T* b_matrix = b + matrix * b_batch;
    T sum = 0;
    for (int step = k_begin; step < k_end; step += tile) {
        int a_k = step + threadIdx.x, b_k = step + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (row < m && a_k < k_end) ? a_matrix[row * a_row + a_k * a_col] : (T)0;
        b_tile[threadIdx.y][threadIdx.x] = (b_k < k_end && column < n) ? b_matrix[b_k * b_row + column * b_col] : (T)0;
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < tile; ++i) {
            sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && column < n) {
        c[((long long)blockIdx.z * m + row) * n + column] = sum;
    }
}

template <typename T>
__global__ void agnostic_blocked_matmul(const T* a, const T* b, T* c, int m, int n, int k, int k_chunk, int splits,
                                        long long a_batch, long long a_row, long long a_col,
                                        long long b_batch, long long b_row, long long b_col) {
    const int depth = 16, span = 64;
    __shared__ T a_tile[16][65];  // [shared index][row], padded: a warp stores 16 shared indices of one row
    __shared__ T b_tile[16][64];  // [shared index][column]
    const int tx = threadIdx.x, ty = threadIdx.y, thread = ty * 16 + tx;
    const int matrix = blockIdx.z / splits, split = blockIdx.z % splits;
    const int row0 = blockIdx.y * span, column0 = blockIdx.x * span;
    const int k_begin = split * k_chunk, k_end = min(k, k_begin + k_chunk);
    const T* a_matrix = a + matrix * a_batch;
    const T* b_matrix = b + matrix * b_batch;
    T sum[4][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) sum[i][j] = 0;
    for (int step = k_begin; step < k_end; step += depth) {
        #pragma unroll
        for (int l = 0; l < 4; ++l) {
            const int index = thread + 256 * l;
            const int a_row_index = index / depth, a_k = step + index % depth;
            const int row = row0 + a_row_index;
            a_tile[index % depth][a_row_index] =
                (row < m && a_k < k_end) ? a_matrix[row * a_row + a_k * a_col] : (T)0;
            const int b_k = step + index / span, column = column0 + index % span;
            b_tile[index / span][index % span] =
                (b_k < k_end && column < n) ? b_matrix[b_k * b_row + column * b_col] : (T)0;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 16; ++kk) {
            T a_values[4], b_values[4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) a_values[i] = a_tile[kk][ty + 16 * i];
            #pragma unroll
            for (int j = 0; j < 4; ++j) b_values[j] = b_tile[kk][tx + 16 * j];
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 4; ++j) sum[i][j] += a_values[i] * b_values[j];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = row0 + ty + 16 * i;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int column = column0 + tx + 16 * j;
            if (row < m && column < n) c[((long long)blockIdx.z * m + row) * n + column] = sum[i][j];
        }
    }
}
"""


TILED_MATMUL_DTYPES = _FLOATS


for _name in ("agnostic_tiled_matmul", "agnostic_blocked_matmul"):
    _declares(_name, TILED_MATMUL_DTYPES)(_template(_name, _TILED_MATMUL_SOURCE))


@_declares("agnostic_capturable_matmul")
def _capturable_matmul():
    return Kernel("reduction", "agnostic_capturable_matmul", "a * b", in_params="T a, T b", out_params="T c",
                  reduction=dict(reduce_expr="a + b", post_map_expr="c = a", identity="0"))


# ----- large contiguous elementwise ops (agnostic.ops.elementwise, launched by cuda_ops) ---------------------------
# Same-shape C-contiguous float operands, each thread loading 16 bytes of each (one vector load) and storing 16:
# a device copy's bandwidth, where CuPy's ufuncs, loading an element at a time through their indexers, reach about
# 85% of it. Each element takes the very operation CuPy's ufunc takes (``in0 + in1``...; relu is
# ``cupy.maximum(x, 0)``'s expression, its canonical NaN included), compiled as CuPy compiles its own (-ftz=true),
# so results are the ufunc's bit for bit. The last thread takes the elements that don't fill a vector.
CONTIGUOUS_BINARY = ("add", "sub", "mul", "div")
_CONTIGUOUS_SOURCE = r"""
#define AGNOSTIC_NAN __int_as_float(0x7fffffff)

template <typename T>
struct alignas(16) agnostic_pack { T values[16 / sizeof(T)]; };

template <int OP, typename T>
__device__ __forceinline__ T agnostic_binary_value(T a, T b) {
    if (OP == 0) return a + b;
    if (OP == 1) return a - b;
    if (OP == 2) return a * b;
    return a / b;
}

template <typename T>
__device__ __forceinline__ T agnostic_relu_value(T x) {
    return isnan(x) ? (T)AGNOSTIC_NAN : (T)max(x, (T)0);
}

template <typename T, int OP>
__global__ void agnostic_contiguous_binary(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                                           long long n) {
    const int width = 16 / sizeof(T);
    const long long vector = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = vector * width;
    if (first + width <= n) {
        const agnostic_pack<T> x = reinterpret_cast<const agnostic_pack<T>*>(a)[vector];
        const agnostic_pack<T> y = reinterpret_cast<const agnostic_pack<T>*>(b)[vector];
        agnostic_pack<T> z;
        #pragma unroll
        for (int k = 0; k < width; ++k) z.values[k] = agnostic_binary_value<OP>(x.values[k], y.values[k]);
        reinterpret_cast<agnostic_pack<T>*>(c)[vector] = z;
    } else {
        for (long long i = first; i < n; ++i) c[i] = agnostic_binary_value<OP>(a[i], b[i]);
    }
}

template <typename T>
__global__ void agnostic_contiguous_relu(const T* __restrict__ a, T* __restrict__ c, long long n) {
    const int width = 16 / sizeof(T);
    const long long vector = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = vector * width;
    if (first + width <= n) {
        const agnostic_pack<T> x = reinterpret_cast<const agnostic_pack<T>*>(a)[vector];
        agnostic_pack<T> z;
        #pragma unroll
        for (int k = 0; k < width; ++k) z.values[k] = agnostic_relu_value(x.values[k]);
        reinterpret_cast<agnostic_pack<T>*>(c)[vector] = z;
    } else {
        for (long long i = first; i < n; ++i) c[i] = agnostic_relu_value(a[i]);
    }
}
"""


for _index, _operation in enumerate(CONTIGUOUS_BINARY):
    _declares(f"agnostic_contiguous_{_operation}", _FLOATS)(
        _template("agnostic_contiguous_binary", _CONTIGUOUS_SOURCE, _index))
_declares("agnostic_contiguous_relu", _FLOATS)(_template("agnostic_contiguous_relu", _CONTIGUOUS_SOURCE))


# ----- one LSTM time step (agnostic.nn.functional._fused_lstm, launched by cuda_ops) -------------------------------
# A step's hidden-to-gates product and its cell in one kernel, so that a step costs one launch (cuBLAS's product
# and a cell kernel cost two, and CuPy's matmul call alone about 35 us of host time). A block computes LSTM_ROWS
# batch rows of 32 hidden units: each of its warps (``lstm_warps``: as many as 32 KiB of shared memory holds the
# partial sums of) sums a share of the shared dimension (lanes read consecutive weights, the hidden state is one
# broadcast value per warp; many warps and an unrolled loop keep many loads in flight: with 8 warps a backward step
# waited on memory's latency 128 times, 25 us), the partial sums meet in shared memory,
# and one warp per row applies the cell. PyTorch's gate order (input, forget, candidate, output): the four gates of
# unit j are columns j, j + H, j + 2H, j + 3H of a row of the (B, 4H) gates. Steps index (T, B, ...) arrays; ``prev``
# (or ``next``) is the step run before (or after), -1 for none: the first states (or the given gradients).
LSTM_ROWS = 4
_LSTM_WARPS = {"agnostic_lstm_step": {4: 16, 8: 8}, "agnostic_lstm_step_backward": {4: 32, 8: 32}}  # by itemsize
_LSTM_STEP_SOURCE = r"""
#define ROWS %(rows)d

template <typename T>
__device__ __forceinline__ T agnostic_sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }

template <typename T, int WARPS>
__global__ void agnostic_lstm_step(const T* projected, const T* first_hidden, const T* first_cell,
                                   const T* weight_t, T* gates, T* cells, T* outputs, int t, int prev, int batch,
                                   int size) {
    __shared__ T partial[WARPS][ROWS * 4][32];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int j = blockIdx.x * 32 + lane, row0 = blockIdx.y * ROWS;
    const long long width = 4LL * size, state = (long long)batch * size;
    const T* hidden_prev = prev < 0 ? first_hidden : outputs + prev * state;
    T sum[ROWS][4];
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) sum[r][0] = sum[r][1] = sum[r][2] = sum[r][3] = 0;
    if (j < size) {
        #pragma unroll 8
        for (int k = warp; k < size; k += WARPS) {
            const T* w = weight_t + k * width + j;  // weight_hh transposed: (H, 4H)
            const T w0 = w[0], w1 = w[size], w2 = w[2 * size], w3 = w[3 * size];
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const T h = hidden_prev[(long long)min(row0 + r, batch - 1) * size + k];
                sum[r][0] += h * w0;
                sum[r][1] += h * w1;
                sum[r][2] += h * w2;
                sum[r][3] += h * w3;
            }
        }
    }
    #pragma unroll
    for (int r = 0; r < ROWS; ++r)
        for (int g = 0; g < 4; ++g) partial[warp][r * 4 + g][lane] = sum[r][g];
    __syncthreads();
    const int row = row0 + warp;
    if (warp >= ROWS || row >= batch || j >= size) return;
    T pre[4];
    const T* projected_row = projected + (long long)t * batch * width + row * width;
    for (int g = 0; g < 4; ++g) {
        T total = 0;
        for (int w = 0; w < WARPS; ++w) total += partial[w][warp * 4 + g][lane];
        pre[g] = projected_row[j + g * size] + total;
    }
    const T input_gate = agnostic_sigmoid(pre[0]), forget_gate = agnostic_sigmoid(pre[1]);
    const T candidate = tanh(pre[2]), output_gate = agnostic_sigmoid(pre[3]);
    const long long unit = (long long)row * size + j;
    const T cell_prev = prev < 0 ? first_cell[unit] : cells[prev * state + unit];
    const T new_cell = forget_gate * cell_prev + input_gate * candidate;
    cells[t * state + unit] = new_cell;
    outputs[t * state + unit] = output_gate * tanh(new_cell);
    T* gate_row = gates + (long long)t * batch * width + row * width;
    gate_row[j] = input_gate;
    gate_row[j + size] = forget_gate;
    gate_row[j + 2 * size] = candidate;
    gate_row[j + 3 * size] = output_gate;
}

template <typename T, int WARPS>
__global__ void agnostic_lstm_step_backward(const T* gates, const T* cells, const T* first_cell,
                                            const T* weight_hh, const T* grad_outputs, const T* grad_hidden_last,
                                            const T* grad_cell_in, T* grad_cell_out, T* grad_gates, int t, int prev,
                                            int next, int batch, int size) {
    __shared__ T partial[WARPS][ROWS][32];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int j = blockIdx.x * 32 + lane, row0 = blockIdx.y * ROWS;
    const long long width = 4LL * size, state = (long long)batch * size;
    T sum[ROWS];
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) sum[r] = 0;
    if (next >= 0 && j < size) {  // the hidden state's gradient through the next step's gates
        const T* following = grad_gates + (long long)next * batch * width;
        #pragma unroll 8
        for (int k = warp; k < width; k += WARPS) {
            const T w = weight_hh[(long long)k * size + j];  // (4H, H)
            #pragma unroll
            for (int r = 0; r < ROWS; ++r) sum[r] += following[(long long)min(row0 + r, batch - 1) * width + k] * w;
        }
    }
    #pragma unroll
    for (int r = 0; r < ROWS; ++r) partial[warp][r][lane] = sum[r];
    __syncthreads();
    const int row = row0 + warp;
    if (warp >= ROWS || row >= batch || j >= size) return;
    const long long unit = (long long)row * size + j;
    T grad_hidden = 0;
    if (next >= 0) {
        for (int w = 0; w < WARPS; ++w) grad_hidden += partial[w][warp][lane];
    } else {
        grad_hidden = grad_hidden_last[unit];
    }
    const T* gate_row = gates + (long long)t * batch * width + row * width;
    const T input_gate = gate_row[j], forget_gate = gate_row[j + size];
    const T candidate = gate_row[j + 2 * size], output_gate = gate_row[j + 3 * size];
    const T cell = cells[t * state + unit];
    const T cell_prev = prev < 0 ? first_cell[unit] : cells[prev * state + unit];
    const T tanh_cell = tanh(cell);
    const T hidden_total = grad_hidden + grad_outputs[t * state + unit];
    const T cell_total = grad_cell_in[unit] + hidden_total * output_gate * ((T)1 - tanh_cell * tanh_cell);
    T* grad_row = grad_gates + (long long)t * batch * width + row * width;
    grad_row[j] = cell_total * candidate * input_gate * ((T)1 - input_gate);
    grad_row[j + size] = cell_total * cell_prev * forget_gate * ((T)1 - forget_gate);
    grad_row[j + 2 * size] = cell_total * input_gate * ((T)1 - candidate * candidate);
    grad_row[j + 3 * size] = hidden_total * tanh_cell * output_gate * ((T)1 - output_gate);
    grad_cell_out[unit] = cell_total * forget_gate;
}
""" % {"rows": LSTM_ROWS}


def lstm_warps(name, dtype):
    """The warps of a block of LSTM step kernel ``name`` for ``dtype`` (its launch's block is ``(32, warps)``)."""
    return _LSTM_WARPS[name][dtype.itemsize]




for _name in ("agnostic_lstm_step", "agnostic_lstm_step_backward"):
    _declares(_name, _FLOATS)(_template(_name, _LSTM_STEP_SOURCE, functools.partial(lstm_warps, _name)))


# ----- softmax over the last axis (agnostic.ops.elementwise.softmax / log_softmax) -----------------------------
# One warp per row: the row's maximum (NaN wins, as NumPy's), the sum of exponentials, then the results; the
# arithmetic is the composed form's, (x - max) first.
_SOFTMAX_SOURCE = r"""
template <typename T>
__device__ __forceinline__ T agnostic_nan_max(T a, T b) { return (b > a || b != b) ? b : a; }

template <typename T>
__device__ __forceinline__ T agnostic_warp_max(T value) {
    for (int offset = 16; offset > 0; offset /= 2)
        value = agnostic_nan_max(value, __shfl_xor_sync(0xffffffff, value, offset));
    return value;
}

template <typename T>
__device__ __forceinline__ T agnostic_warp_sum(T value) {
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffff, value, offset);
    return value;
}

template <typename T>
__global__ void agnostic_softmax_rows(const T* x, T* y, long long rows, long long cols, int logarithm) {
    const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* in = x + row * cols;
    T* out = y + row * cols;
    T largest = in[0];  // every row has an element; NVRTC has no INFINITY to start from
    for (long long c = lane; c < cols; c += 32) largest = agnostic_nan_max(largest, in[c]);
    largest = agnostic_warp_max(largest);
    T total = 0;
    for (long long c = lane; c < cols; c += 32) total += exp(in[c] - largest);
    total = agnostic_warp_sum(total);
    if (logarithm) {
        const T log_total = log(total);
        for (long long c = lane; c < cols; c += 32) out[c] = (in[c] - largest) - log_total;
    } else {
        for (long long c = lane; c < cols; c += 32) out[c] = exp(in[c] - largest) / total;
    }
}

template <typename T>
__global__ void agnostic_softmax_backward_rows(const T* grad, const T* result, T* out, long long rows, long long cols,
                                               int logarithm) {
    const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* g = grad + row * cols;
    const T* r = result + row * cols;
    T* o = out + row * cols;
    T total = 0;
    for (long long c = lane; c < cols; c += 32) total += logarithm ? g[c] : g[c] * r[c];
    total = agnostic_warp_sum(total);
    if (logarithm) {
        for (long long c = lane; c < cols; c += 32) o[c] = g[c] - exp(r[c]) * total;
    } else {
        for (long long c = lane; c < cols; c += 32) o[c] = r[c] * (g[c] - total);
    }
}
"""


for _name in ("agnostic_softmax_rows", "agnostic_softmax_backward_rows"):
    _declares(_name, _FLOATS)(_template(_name, _SOFTMAX_SOURCE))


# ----- layer_norm over the last axis (agnostic.nn.functional.layer_norm) ------------------------------------------
# One warp per row, as softmax's (its helpers are in the same source): the mean, then the mean of squared deviations
# (NumPy's var, two passes), then (x - mean) * rsqrt(var + eps) * weight + bias; the gradient kernel also writes
# grad * normalized for the weight's gradient (a column sum).
_LAYER_NORM_SOURCE = _SOFTMAX_SOURCE + r"""
template <typename T>
__global__ void agnostic_layer_norm_rows(const T* x, const T* weight, const T* bias, T* y, T* mean_out, T* rstd_out,
                                         long long rows, long long cols, double eps, int has_weight, int has_bias) {
    const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* in = x + row * cols;
    T* out = y + row * cols;
    T total = 0;
    for (long long c = lane; c < cols; c += 32) total += in[c];
    const T mean = agnostic_warp_sum(total) / (T)cols;
    T squares = 0;
    for (long long c = lane; c < cols; c += 32) squares += (in[c] - mean) * (in[c] - mean);
    const T rstd = (T)1 / sqrt(agnostic_warp_sum(squares) / (T)cols + (T)eps);
    for (long long c = lane; c < cols; c += 32) {
        T value = (in[c] - mean) * rstd;
        if (has_weight) value *= weight[c];
        if (has_bias) value += bias[c];
        out[c] = value;
    }
    if (lane == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

template <typename T>
__global__ void agnostic_layer_norm_backward_rows(const T* grad, const T* x, const T* weight, const T* mean,
                                                  const T* rstd, T* grad_input, T* grad_normalized, long long rows,
                                                  long long cols, int has_weight) {
    const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* g = grad + row * cols;
    const T* in = x + row * cols;
    T* dx = grad_input + row * cols;
    T* gn = grad_normalized + row * cols;
    const T m = mean[row], r = rstd[row];
    T sum_g = 0, sum_gx = 0;
    for (long long c = lane; c < cols; c += 32) {
        const T normalized = (in[c] - m) * r;
        const T scaled = has_weight ? g[c] * weight[c] : g[c];
        sum_g += scaled;
        sum_gx += scaled * normalized;
        gn[c] = g[c] * normalized;
    }
    sum_g = agnostic_warp_sum(sum_g) / (T)cols;
    sum_gx = agnostic_warp_sum(sum_gx) / (T)cols;
    for (long long c = lane; c < cols; c += 32) {
        const T normalized = (in[c] - m) * r;
        const T scaled = has_weight ? g[c] * weight[c] : g[c];
        dx[c] = r * (scaled - sum_g - normalized * sum_gx);
    }
}
"""


for _name in ("agnostic_layer_norm_rows", "agnostic_layer_norm_backward_rows"):
    _declares(_name, _FLOATS)(_template(_name, _LAYER_NORM_SOURCE))


# ----- optimizer updates, one multi-tensor kernel per algorithm and dtype (agnostic.optim._fused) ------------------
MULTI_TENSOR_CHUNK = 4096  # elements per thread block: the host's launch table splits tensors into chunks this size


class MultiTensorUpdate:
    """An optimizer's per-element CUDA C body and the signature around it: ``lists`` names its arrays (``param``
    first, then ``grad`` where it has one), ``scalars`` its arguments of the compute type ``C``, and ``flags`` its
    int arguments. ``counters`` names the lists (among ``lists``) of step counts: one float32 element per tensor,
    whatever the parameters' dtype, read as ``name[0]``."""

    def __init__(self, lists, scalars, flags, body, counters=()):
        self.lists, self.scalars, self.flags, self.body = lists, scalars, flags, body
        self.counters = counters


_MULTI_TENSOR_SOURCE = r"""
{include}
typedef {storage} T;
typedef {compute} C;
__device__ __forceinline__ C ld(const T* a, long long i) {{ return {load}; }}
__device__ __forceinline__ void st(T* a, long long i, C v) {{ a[i] = {store}; }}
__device__ __forceinline__ float sqrt_(float x) {{ return sqrtf(x); }}
__device__ __forceinline__ double sqrt_(double x) {{ return sqrt(x); }}
__device__ __forceinline__ float pow_(float x, float y) {{ return powf(x, y); }}
__device__ __forceinline__ double pow_(double x, double y) {{ return pow(x, y); }}
__device__ __forceinline__ C lerp_(C start, C end, C w, C one_minus_w) {{
    return (w < (C)0.5 && w > (C)-0.5) ? start + w * (end - start) : end - (end - start) * one_minus_w;
}}
extern "C" __global__ void {name}(const long long* table, const int n_tensors, const int n_blocks{parameters}) {{
    const long long n = (long long)n_tensors;
    const long long* sizes = table + {list_count} * n;
    const long long* block_tensor = sizes + n;
    const long long* block_start = block_tensor + n_blocks;
    const long long t = block_tensor[blockIdx.x];
    const long long start = block_start[blockIdx.x];
    const long long stop = start + {chunk} < sizes[t] ? start + {chunk} : sizes[t];
{pointers}
    for (long long i = start + threadIdx.x; i < stop; i += blockDim.x) {{
{body}
    }}
}}
"""

# float16 converts with the PTX instructions cuda_fp16.h uses, so that the kernel needs no header at all
_HALF = r"""
__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short float_to_half(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
"""
_STORAGE = {
    "unsigned short": (_HALF, "half_to_float(a[i])", "float_to_half(v)"),
    "float": ("", "a[i]", "v"),
    "double": ("", "a[i]", "v"),
}
_DECAYED_GRAD = """
C g = ld(grad, i);
if (maximize) g = -g;
C p = ld(param, i);
if (weight_decay != (C)0) g = g + p * weight_decay;
"""

_ADAM = """
C g = ld(grad, i);
if (maximize) g = -g;
C p = ld(param, i);
if (weight_decay != (C)0) {
    if (decoupled) p = p * decay;
    else g = g + p * weight_decay;
}
C m = lerp_(ld(exp_avg, i), g, one_minus_beta1, beta1_complement);
C v = ld(exp_avg_sq, i) * beta2 + (g * g) * one_minus_beta2;
st(exp_avg, i, m);
st(exp_avg_sq, i, v);
if (amsgrad) {
    C v_max = ld(max_exp_avg_sq, i);
    v_max = (v_max != v_max || v_max > v) ? v_max : v;
    st(max_exp_avg_sq, i, v_max);
    v = v_max;
}
C denom = sqrt_(v) / bias_correction2_sqrt + eps;
st(param, i, p + (m / denom) * neg_step_size);
"""

MULTI_TENSOR_UPDATES = {
    "sgd": MultiTensorUpdate(
        ("param", "grad", "momentum_buffer"),
        ("weight_decay", "momentum", "one_minus_dampening", "neg_lr"), ("maximize", "nesterov", "first"),
        _DECAYED_GRAD + """
if (momentum != (C)0) {
    C b = g;
    if (!first) b = ld(momentum_buffer, i) * momentum + g * one_minus_dampening;
    st(momentum_buffer, i, b);
    g = nesterov ? g + b * momentum : b;
}
st(param, i, p + g * neg_lr);
"""),
    "adam": MultiTensorUpdate(
        ("param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
        ("weight_decay", "decay", "one_minus_beta1", "beta1_complement", "beta2", "one_minus_beta2",
         "bias_correction2_sqrt", "eps", "neg_step_size"),
        ("maximize", "decoupled", "amsgrad"), _ADAM),
    # Adam with capturable=True: each tensor's step count is on the device (incremented by "count" beforehand), so
    # the bias corrections are computed here, in C, from it: nothing in the launch depends on a host step count.
    "adam_capturable": MultiTensorUpdate(
        ("param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
        ("weight_decay", "decay", "one_minus_beta1", "beta1_complement", "beta1", "beta2", "one_minus_beta2", "eps",
         "lr"),
        ("maximize", "decoupled", "amsgrad"), """
const C step_count = (C)step[0];
const C bias_correction2_sqrt = sqrt_((C)1 - pow_(beta2, step_count));
const C neg_step_size = -(lr / ((C)1 - pow_(beta1, step_count)));
""" + _ADAM, counters=("step",)),
    # One more step in each count (capturable Adam's "step" tensors, float32).
    "count": MultiTensorUpdate(("param",), (), (), "st(param, i, ld(param, i) + (C)1);"),
    "rmsprop": MultiTensorUpdate(
        ("param", "grad", "square_avg", "momentum_buffer", "grad_avg"),
        ("weight_decay", "alpha", "one_minus_alpha", "alpha_complement", "eps", "momentum", "neg_lr"),
        ("maximize", "centered"),
        _DECAYED_GRAD + """
C sq = ld(square_avg, i) * alpha + (g * g) * one_minus_alpha;
st(square_avg, i, sq);
C avg;
if (centered) {
    C ga = lerp_(ld(grad_avg, i), g, one_minus_alpha, alpha_complement);
    st(grad_avg, i, ga);
    avg = sqrt_(sq - ga * ga);
} else {
    avg = sqrt_(sq);
}
avg = avg + eps;
if (momentum > (C)0) {
    C b = ld(momentum_buffer, i) * momentum + g / avg;
    st(momentum_buffer, i, b);
    st(param, i, p + b * neg_lr);
} else {
    st(param, i, p + (g / avg) * neg_lr);
}
"""),
}

_MULTI_TENSOR_TYPES = {  # parameter dtype -> the kernel's storage and compute types
    numpy.dtype(numpy.float16): ("unsigned short", "float"),
    numpy.dtype(numpy.float32): ("float", "float"),
    numpy.dtype(numpy.float64): ("double", "double"),
}


def _multi_tensor_update(name):
    def declare(dtype):
        update = MULTI_TENSOR_UPDATES[name]
        storage, compute = _MULTI_TENSOR_TYPES[dtype]
        include, load, store = _STORAGE[storage]
        parameters = "".join(f", const C {scalar}" for scalar in update.scalars)
        parameters += "".join(f", const int {flag}" for flag in update.flags)
        pointers = "\n".join(f"    const float* const {array} = (const float*)table[{index} * n + t];"
                             if array in update.counters else f"    T* const {array} = (T*)table[{index} * n + t];"
                             for index, array in enumerate(update.lists))
        body = "\n".join("        " + line for line in update.body.strip().splitlines())
        kernel_name = f"agnostic_{name}_{dtype.name}"
        source = _MULTI_TENSOR_SOURCE.format(
            include=include, storage=storage, compute=compute, load=load, store=store, name=kernel_name,
            parameters=parameters, list_count=len(update.lists), chunk=f"{MULTI_TENSOR_CHUNK}LL", pointers=pointers,
            body=body)
        return Kernel("raw", kernel_name, source)
    return declare


for _name in MULTI_TENSOR_UPDATES:
    _declares(f"agnostic_{_name}", _MULTI_TENSOR_TYPES)(_multi_tensor_update(_name))


# ----- Philox random draws, one kernel thread per Philox block (agnostic._backends.philox) -------------------------
_PHILOX_DEVICE_SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

struct Block { u64 v[4]; };

// Philox4x64-10 as NumPy's numpy/random/src/philox/philox.h; the counter is base + index as a 256-bit integer
// (base < 2**128, so the carry stops in the second word).
__device__ __forceinline__ Block philox_block(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 index) {
    u64 c0 = base_lo + index;
    u64 c1 = base_hi + (c0 < base_lo ? 1ULL : 0ULL);
    u64 c2 = 0ULL, c3 = 0ULL;
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key0 += 0x9E3779B97F4A7C15ULL;
            key1 += 0xBB67AE8584CAA73BULL;
        }
        const u64 hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, c0);
        const u64 lo0 = 0xD2E7470EE14C6C93ULL * c0;
        const u64 hi1 = __umul64hi(0xCA5A826395121157ULL, c2);
        const u64 lo1 = 0xCA5A826395121157ULL * c2;
        c0 = hi1 ^ c1 ^ key0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ key1;
        c3 = lo0;
    }
    Block out = {{c0, c1, c2, c3}};
    return out;
}

// The j-th of the 8 32-bit halves of a block, low half of each word first (NumPy's next_uint32).
__device__ __forceinline__ u32 half_word(const Block& block, int j) {
    const u64 word = block.v[j >> 1];
    return (j & 1) ? (u32)(word >> 32) : (u32)word;
}

__device__ __forceinline__ u64 thread_index() {
    return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

// Explicit _rn intrinsics everywhere: no FMA contraction, so each operation rounds exactly as NumPy's does.
__device__ __forceinline__ float uniform_float(u32 bits, int shift, float unit) {
    return __fmul_rn(__uint2float_rn(bits >> shift), unit);
}

__device__ __forceinline__ double uniform_double(u64 bits, int shift, double unit) {
    return __dmul_rn(__ull2double_rn(bits >> shift), unit);
}

__device__ __forceinline__ float affine(float x, float scale, float low) {
    return __fadd_rn(__fmul_rn(x, scale), low);
}

__device__ __forceinline__ double affine(double x, double scale, double low) {
    return __dadd_rn(__dmul_rn(x, scale), low);
}

"""

_PHILOX_SOURCE = _PHILOX_DEVICE_SOURCE + r"""
// Draws are allocated 16-byte aligned and start each thread at a multiple of 32 bytes: full blocks store as vectors.
__device__ __forceinline__ void store(float* out, u64 first, u64 count, const float (&value)[8]) {
    if (first + 8 <= count) {
        float4* vectors = reinterpret_cast<float4*>(out + first);
        vectors[0] = make_float4(value[0], value[1], value[2], value[3]);
        vectors[1] = make_float4(value[4], value[5], value[6], value[7]);
    } else {
        for (int j = 0; j < 8; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

__device__ __forceinline__ void store(double* out, u64 first, u64 count, const double (&value)[4]) {
    if (first + 4 <= count) {
        double2* vectors = reinterpret_cast<double2*>(out + first);
        vectors[0] = make_double2(value[0], value[1]);
        vectors[1] = make_double2(value[2], value[3]);
    } else {
        for (int j = 0; j < 4; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

__device__ __forceinline__ void store(u64* out, u64 first, u64 count, const u64 (&value)[4]) {
    if (first + 4 <= count) {
        ulonglong2* vectors = reinterpret_cast<ulonglong2*>(out + first);
        vectors[0] = make_ulonglong2(value[0], value[1]);
        vectors[1] = make_ulonglong2(value[2], value[3]);
    } else {
        for (int j = 0; j < 4; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

extern "C" __global__ void philox_uniform_float32(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  int shift, float unit, float scale, float low, float* out) {
    const u64 index = thread_index();
    const u64 first = index * 8;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool scaled = scale != 1.0f || low != 0.0f;
    float value[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float u = uniform_float(half_word(block, j), shift, unit);
        value[j] = scaled ? affine(u, scale, low) : u;
    }
    store(out, first, count, value);
}

extern "C" __global__ void philox_uniform_float64(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  int shift, double unit, double scale, double low, double* out) {
    const u64 index = thread_index();
    const u64 first = index * 4;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool scaled = scale != 1.0 || low != 0.0;
    double value[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const double u = uniform_double(block.v[j], shift, unit);
        value[j] = scaled ? affine(u, scale, low) : u;
    }
    store(out, first, count, value);
}

// Dropout: x times 1 / keep where the uniform at x's place is below keep, times 0 elsewhere (so NaN and infinities
// stay NaN, as agnostic.bernoulli's mask, divided by keep and multiplied in, gives them).
extern "C" __global__ void philox_dropout_float32(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  float keep, const float* x, float* out) {
    const u64 index = thread_index();
    const u64 first = index * 8;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const float scale = __fdiv_rn(1.0f, keep);
    for (int j = 0; j < 8 && first + j < count; ++j) {
        const bool kept = uniform_float(half_word(block, j), 8, 5.9604644775390625e-08f) < keep;
        out[first + j] = __fmul_rn(x[first + j], kept ? scale : 0.0f);
    }
}

extern "C" __global__ void philox_dropout_float64(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  double keep, const double* x, double* out) {
    const u64 index = thread_index();
    const u64 first = index * 4;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const double scale = __ddiv_rn(1.0, keep);
    for (int j = 0; j < 4 && first + j < count; ++j) {
        const bool kept = uniform_double(block.v[j], 11, 1.1102230246251565e-16) < keep;
        out[first + j] = __dmul_rn(x[first + j], kept ? scale : 0.0);
    }
}

extern "C" __global__ void philox_normal_float32(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                 u64 half_blocks, float minus_two, float two_pi, float scale,
                                                 float low, float* out) {
    const u64 index = thread_index();
    if (index >= half_blocks) return;
    const Block radius_bits = philox_block(key0, key1, base_lo, base_hi, index);
    const Block angle_bits = philox_block(key0, key1, base_lo, base_hi, half_blocks + index);
    const bool scaled = scale != 1.0f || low != 0.0f;
    const float unit = 1.0f / 16777216.0f;
    float cos_part[8], sin_part[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float u = __fsub_rn(1.0f, uniform_float(half_word(radius_bits, j), 8, unit));
        const float radius = __fsqrt_rn(__fmul_rn(logf(u), minus_two));
        const float angle = __fmul_rn(uniform_float(half_word(angle_bits, j), 8, unit), two_pi);
        float s, c;
        sincosf(angle, &s, &c);
        cos_part[j] = __fmul_rn(c, radius);
        sin_part[j] = __fmul_rn(s, radius);
        if (scaled) {
            cos_part[j] = affine(cos_part[j], scale, low);
            sin_part[j] = affine(sin_part[j], scale, low);
        }
    }
    store(out, index * 8, count, cos_part);
    store(out, half_blocks * 8 + index * 8, count, sin_part);
}

extern "C" __global__ void philox_normal_float64(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                 u64 half_blocks, double minus_two, double two_pi, double scale,
                                                 double low, double* out) {
    const u64 index = thread_index();
    if (index >= half_blocks) return;
    const Block radius_bits = philox_block(key0, key1, base_lo, base_hi, index);
    const Block angle_bits = philox_block(key0, key1, base_lo, base_hi, half_blocks + index);
    const bool scaled = scale != 1.0 || low != 0.0;
    const double unit = 1.0 / 9007199254740992.0;
    double cos_part[4], sin_part[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const double u = __dsub_rn(1.0, uniform_double(radius_bits.v[j], 11, unit));
        const double radius = __dsqrt_rn(__dmul_rn(log(u), minus_two));
        const double angle = __dmul_rn(uniform_double(angle_bits.v[j], 11, unit), two_pi);
        double s, c;
        sincos(angle, &s, &c);
        cos_part[j] = __dmul_rn(c, radius);
        sin_part[j] = __dmul_rn(s, radius);
        if (scaled) {
            cos_part[j] = affine(cos_part[j], scale, low);
            sin_part[j] = affine(sin_part[j], scale, low);
        }
    }
    store(out, index * 4, count, cos_part);
    store(out, half_blocks * 4 + index * 4, count, sin_part);
}

extern "C" __global__ void philox_integers(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count, u64 span,
                                           u64 low, u64* out) {
    const u64 index = thread_index();
    const u64 first = index * 4;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool power_of_two = (span & (span - 1ULL)) == 0ULL;
    u64 value[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        u64 word = block.v[j];
        if (span != 0ULL) word = power_of_two ? (word & (span - 1ULL)) : (word % span);
        value[j] = word + low;
    }
    store(out, first, count, value);
}
"""


def _philox(name):
    return lambda: Kernel("raw", name, _PHILOX_SOURCE)


for _name in ("philox_uniform_float32", "philox_uniform_float64", "philox_normal_float32", "philox_normal_float64",
              "philox_integers", "philox_dropout_float32", "philox_dropout_float64"):
    _declares(_name)(_philox(_name))


# ----- attention (agnostic.nn.functional's fused scaled dot-product attention) -------------------------------------
# softmax(scale * q k^T) v for each (batch, head), q, k, v and the output strided views of (B, H, L or S, D) with
# unit last stride (the heads of a packed projection, read in place). FlashAttention's scheme in its simplest form:
# the keys and values pass through shared memory a tile of 32 at a time, a warp per query row keeps a running
# maximum, sum and output (the online softmax), and the row's log-sum-exp is kept for the gradient, which computes
# the weights again instead of storing them. The gradient is two kernels, one a warp per query row (dq) and one a
# warp per key row (dk and dv), so that no two blocks add into one value: the results are deterministic.
# Each lane of a warp works on one key (or query) of the tile for the dot products, and on the dimensions lane,
# lane + 32, ... of its own row for the sums over the tile. MAX_D (32, 64 or 128) bounds the head size.
_ATTENTION_SOURCE = _SOFTMAX_SOURCE + _PHILOX_DEVICE_SOURCE + r"""
#define AGNOSTIC_ATTENTION_TILE 32
#define AGNOSTIC_ATTENTION_WARPS 8

template <typename T> __device__ __forceinline__ T agnostic_minus_infinity();
template <> __device__ __forceinline__ float agnostic_minus_infinity<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double agnostic_minus_infinity<double>() {
    return __longlong_as_double(0xfff0000000000000ULL);
}

struct AgnosticAttentionShape {
    long long heads, queries, keys, dim, value_dim;
    long long q[3], k[3], v[3], o[3];  // element strides of batch, head and row
};

// The shape comes as separate integers (what a CuPy launch passes) and is gathered into `shape`.
#define AGNOSTIC_ATTENTION_SHAPE_PARAMETERS long long heads_, long long queries_, long long keys_, long long dim_, \
    long long value_dim_, long long q0, long long q1, long long q2, long long k0, long long k1, long long k2, \
    long long v0, long long v1, long long v2, long long o0, long long o1, long long o2
#define AGNOSTIC_ATTENTION_SHAPE const AgnosticAttentionShape shape = \
    {heads_, queries_, keys_, dim_, value_dim_, {q0, q1, q2}, {k0, k1, k2}, {v0, v1, v2}, {o0, o1, o2}}

// Dropout of the weights: weight (b, h, i, j) is kept with probability `keep`, then scaled by 1 / keep, by the
// uniform that agnostic.bernoulli draws for element ((b * H + h) * L + i) * S + j of a (B, H, L, S) tensor from the
// Philox stream at (key, base) (philox.py's float32 and float64 uniforms), so that for one seed the CPU's composed
// dropout and these kernels drop the same weights.
#define AGNOSTIC_DROPOUT_PARAMETERS u64 dropout_key, u64 dropout_base_lo, u64 dropout_base_hi, double keep_, \
    int dropping
#define AGNOSTIC_DROPOUT_ARGUMENTS dropout_key, dropout_base_lo, dropout_base_hi, keep_, dropping

__device__ __forceinline__ bool agnostic_keeps(float keep, u64 key, u64 base_lo, u64 base_hi, u64 element) {
    const Block block = philox_block(key, 0ULL, base_lo, base_hi, element / 8);
    return uniform_float(half_word(block, (int)(element % 8)), 8, 5.9604644775390625e-08f) < keep;
}

__device__ __forceinline__ bool agnostic_keeps(double keep, u64 key, u64 base_lo, u64 base_hi, u64 element) {
    const Block block = philox_block(key, 0ULL, base_lo, base_hi, element / 4);
    return uniform_double(block.v[element % 4], 11, 1.1102230246251565e-16) < keep;
}

// `value` times 1 / keep for a weight that dropout keeps, zero for one it drops; `value` itself without dropout.
template <typename T>
__device__ __forceinline__ T agnostic_dropped(T value, AGNOSTIC_DROPOUT_PARAMETERS, u64 element) {
    if (!dropping) return value;
    const T keep = (T)keep_;
    return agnostic_keeps(keep, dropout_key, dropout_base_lo, dropout_base_hi, element) ? value * ((T)1 / keep)
                                                                                         : (T)0;
}

// Rows [start, start + 32) of a (rows, dim) matrix at `base` with row stride `stride` into `tile`, zeros past `rows`.
template <typename T, int MAX_D>
__device__ __forceinline__ void agnostic_load_tile(T (*tile)[MAX_D + 1], const T* base, long long stride,
                                                   long long start, long long rows, long long dim) {
    for (long long index = threadIdx.x; index < AGNOSTIC_ATTENTION_TILE * dim; index += blockDim.x) {
        const long long row = index / dim, column = index % dim;
        tile[row][column] = start + row < rows ? base[(start + row) * stride + column] : (T)0;
    }
}

template <typename T, int MAX_D>
__global__ void agnostic_attention_forward(const T* q, const T* k, const T* v, T* o, T* lse,
                                           AGNOSTIC_ATTENTION_SHAPE_PARAMETERS, double scale_, int causal,
    AGNOSTIC_DROPOUT_PARAMETERS) {
    AGNOSTIC_ATTENTION_SHAPE;
    constexpr int PER_LANE = MAX_D / 32;
    __shared__ T keys[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T values[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T query_rows[AGNOSTIC_ATTENTION_WARPS][MAX_D];
    __shared__ T weights[AGNOSTIC_ATTENTION_WARPS][AGNOSTIC_ATTENTION_TILE];
    const T scale = (T)scale_;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long b = blockIdx.x / shape.heads, h = blockIdx.x % shape.heads;
    const long long first_row = (long long)blockIdx.y * AGNOSTIC_ATTENTION_WARPS, row = first_row + warp;
    const bool active = row < shape.queries;
    const T* qb = q + b * shape.q[0] + h * shape.q[1];
    const T* kb = k + b * shape.k[0] + h * shape.k[1];
    const T* vb = v + b * shape.v[0] + h * shape.v[1];
    if (active)
        for (long long d = lane; d < shape.dim; d += 32) query_rows[warp][d] = qb[row * shape.q[2] + d];
    T out[PER_LANE];
    for (int r = 0; r < PER_LANE; ++r) out[r] = 0;
    T largest = agnostic_minus_infinity<T>(), total = 0;
    const long long last_row = min(shape.queries, first_row + AGNOSTIC_ATTENTION_WARPS) - 1;
    const long long key_end = causal ? min(shape.keys, last_row + 1) : shape.keys;
    for (long long start = 0; start < key_end; start += AGNOSTIC_ATTENTION_TILE) {
        __syncthreads();
        agnostic_load_tile<T, MAX_D>(keys, kb, shape.k[2], start, shape.keys, shape.dim);
        agnostic_load_tile<T, MAX_D>(values, vb, shape.v[2], start, shape.keys, shape.value_dim);
        __syncthreads();
        if (!active) continue;
        const long long key = start + lane;
        const bool valid = key < shape.keys && (!causal || key <= row);
        T score = 0;
        for (long long d = 0; d < shape.dim; ++d) score += query_rows[warp][d] * keys[lane][d];
        score = valid ? score * scale : agnostic_minus_infinity<T>();
        // the first tile holds key 0, which every row keeps: from then on `largest` is finite (or NaN)
        const T new_largest = agnostic_nan_max(largest, agnostic_warp_max(score));
        const T weight = valid ? exp(score - new_largest) : (T)0;
        const T shrink = exp(largest - new_largest);
        total = total * shrink + agnostic_warp_sum(weight);
        largest = new_largest;
        weights[warp][lane] = agnostic_dropped(weight, AGNOSTIC_DROPOUT_ARGUMENTS,
                                               ((u64)blockIdx.x * shape.queries + row) * shape.keys + key);
        __syncwarp();
        for (int r = 0; r < PER_LANE; ++r) {
            const long long d = lane + 32 * r;
            if (d >= shape.value_dim) break;
            T sum = out[r] * shrink;
            for (int j = 0; j < AGNOSTIC_ATTENTION_TILE; ++j) sum += weights[warp][j] * values[j][d];
            out[r] = sum;
        }
        __syncwarp();
    }
    if (!active) return;
    T* ob = o + b * shape.o[0] + h * shape.o[1] + row * shape.o[2];
    for (int r = 0; r < PER_LANE; ++r) {
        const long long d = lane + 32 * r;
        if (d < shape.value_dim) ob[d] = out[r] / total;
    }
    if (lane == 0) lse[(long long)blockIdx.x * shape.queries + row] = largest + log(total);
}

// dO . O for one row, summed over the warp (every lane gets it): the softmax gradient's correction term.
template <typename T>
__device__ __forceinline__ T agnostic_row_dot(const T* a, const T* b, long long dim) {
    T sum = 0;
    for (long long d = threadIdx.x % 32; d < dim; d += 32) sum += a[d] * b[d];
    return agnostic_warp_sum(sum);
}

template <typename T, int MAX_D>
__global__ void agnostic_attention_backward_query(const T* q, const T* k, const T* v, const T* o, const T* grad,
                                                  const T* lse, T* grad_q, AGNOSTIC_ATTENTION_SHAPE_PARAMETERS,
                                                  double scale_, int causal,
    AGNOSTIC_DROPOUT_PARAMETERS) {
    // grad and grad_q have the strides of o and q
    AGNOSTIC_ATTENTION_SHAPE;
    constexpr int PER_LANE = MAX_D / 32;
    __shared__ T keys[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T values[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T query_rows[AGNOSTIC_ATTENTION_WARPS][MAX_D];
    __shared__ T grad_rows[AGNOSTIC_ATTENTION_WARPS][MAX_D];
    __shared__ T score_grads[AGNOSTIC_ATTENTION_WARPS][AGNOSTIC_ATTENTION_TILE];
    const T scale = (T)scale_;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long b = blockIdx.x / shape.heads, h = blockIdx.x % shape.heads;
    const long long first_row = (long long)blockIdx.y * AGNOSTIC_ATTENTION_WARPS, row = first_row + warp;
    const bool active = row < shape.queries;
    const long long q_offset = b * shape.q[0] + h * shape.q[1], o_offset = b * shape.o[0] + h * shape.o[1];
    const T* kb = k + b * shape.k[0] + h * shape.k[1];
    const T* vb = v + b * shape.v[0] + h * shape.v[1];
    T correction = 0, row_lse = 0;
    if (active) {
        const T* g = grad + o_offset + row * shape.o[2];
        for (long long d = lane; d < shape.dim; d += 32) query_rows[warp][d] = q[q_offset + row * shape.q[2] + d];
        for (long long d = lane; d < shape.value_dim; d += 32) grad_rows[warp][d] = g[d];
        correction = agnostic_row_dot(g, o + o_offset + row * shape.o[2], shape.value_dim);
        row_lse = lse[(long long)blockIdx.x * shape.queries + row];
    }
    T out[PER_LANE];
    for (int r = 0; r < PER_LANE; ++r) out[r] = 0;
    const long long last_row = min(shape.queries, first_row + AGNOSTIC_ATTENTION_WARPS) - 1;
    const long long key_end = causal ? min(shape.keys, last_row + 1) : shape.keys;
    for (long long start = 0; start < key_end; start += AGNOSTIC_ATTENTION_TILE) {
        __syncthreads();
        agnostic_load_tile<T, MAX_D>(keys, kb, shape.k[2], start, shape.keys, shape.dim);
        agnostic_load_tile<T, MAX_D>(values, vb, shape.v[2], start, shape.keys, shape.value_dim);
        __syncthreads();
        if (!active) continue;
        const long long key = start + lane;
        const bool valid = key < shape.keys && (!causal || key <= row);
        T score = 0, weight_grad = 0;
        for (long long d = 0; d < shape.dim; ++d) score += query_rows[warp][d] * keys[lane][d];
        for (long long d = 0; d < shape.value_dim; ++d) weight_grad += grad_rows[warp][d] * values[lane][d];
        const T weight = valid ? exp(score * scale - row_lse) : (T)0;
        const u64 element = ((u64)blockIdx.x * shape.queries + row) * shape.keys + key;
        score_grads[warp][lane] = weight * (agnostic_dropped(weight_grad, AGNOSTIC_DROPOUT_ARGUMENTS, element)
                                            - correction);
        __syncwarp();
        for (int r = 0; r < PER_LANE; ++r) {
            const long long d = lane + 32 * r;
            if (d >= shape.dim) break;
            T sum = out[r];
            for (int j = 0; j < AGNOSTIC_ATTENTION_TILE; ++j) sum += score_grads[warp][j] * keys[j][d];
            out[r] = sum;
        }
        __syncwarp();
    }
    if (!active) return;
    T* gq = grad_q + q_offset + row * shape.q[2];
    for (int r = 0; r < PER_LANE; ++r) {
        const long long d = lane + 32 * r;
        if (d < shape.dim) gq[d] = out[r] * scale;
    }
}

template <typename T, int MAX_D>
__global__ void agnostic_attention_backward_key(const T* q, const T* k, const T* v, const T* o, const T* grad,
                                                const T* lse, T* grad_k, T* grad_v, AGNOSTIC_ATTENTION_SHAPE_PARAMETERS,
                                                double scale_, int causal,
    AGNOSTIC_DROPOUT_PARAMETERS) {
    // grad has the strides of o, grad_k and grad_v those of k and v
    AGNOSTIC_ATTENTION_SHAPE;
    constexpr int PER_LANE = MAX_D / 32;
    __shared__ T queries[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T grads[AGNOSTIC_ATTENTION_TILE][MAX_D + 1];
    __shared__ T key_rows[AGNOSTIC_ATTENTION_WARPS][MAX_D];
    __shared__ T value_rows[AGNOSTIC_ATTENTION_WARPS][MAX_D];
    __shared__ T tile_lse[AGNOSTIC_ATTENTION_TILE], corrections[AGNOSTIC_ATTENTION_TILE];
    __shared__ T weights[AGNOSTIC_ATTENTION_WARPS][AGNOSTIC_ATTENTION_TILE];
    __shared__ T score_grads[AGNOSTIC_ATTENTION_WARPS][AGNOSTIC_ATTENTION_TILE];
    const T scale = (T)scale_;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const long long b = blockIdx.x / shape.heads, h = blockIdx.x % shape.heads;
    const long long first_key = (long long)blockIdx.y * AGNOSTIC_ATTENTION_WARPS, key = first_key + warp;
    const bool active = key < shape.keys;
    const T* qb = q + b * shape.q[0] + h * shape.q[1];
    const T* ob = o + b * shape.o[0] + h * shape.o[1];
    const T* gb = grad + b * shape.o[0] + h * shape.o[1];
    const T* lb = lse + (long long)blockIdx.x * shape.queries;
    const long long k_offset = b * shape.k[0] + h * shape.k[1], v_offset = b * shape.v[0] + h * shape.v[1];
    if (active) {
        for (long long d = lane; d < shape.dim; d += 32) key_rows[warp][d] = k[k_offset + key * shape.k[2] + d];
        for (long long d = lane; d < shape.value_dim; d += 32)
            value_rows[warp][d] = v[v_offset + key * shape.v[2] + d];
    }
    T key_out[PER_LANE], value_out[PER_LANE];
    for (int r = 0; r < PER_LANE; ++r) key_out[r] = value_out[r] = 0;
    // causal: rows before the block's first key keep none of its keys
    const long long query_start = causal ? first_key / AGNOSTIC_ATTENTION_TILE * AGNOSTIC_ATTENTION_TILE : 0;
    for (long long start = query_start; start < shape.queries; start += AGNOSTIC_ATTENTION_TILE) {
        __syncthreads();
        agnostic_load_tile<T, MAX_D>(queries, qb, shape.q[2], start, shape.queries, shape.dim);
        agnostic_load_tile<T, MAX_D>(grads, gb, shape.o[2], start, shape.queries, shape.value_dim);
        for (int j = warp; j < AGNOSTIC_ATTENTION_TILE; j += AGNOSTIC_ATTENTION_WARPS) {
            const long long row = start + j;
            const T c = row < shape.queries ? agnostic_row_dot(gb + row * shape.o[2], ob + row * shape.o[2],
                                                               shape.value_dim) : (T)0;
            if (lane == 0) {
                corrections[j] = c;
                tile_lse[j] = row < shape.queries ? lb[row] : (T)0;
            }
        }
        __syncthreads();
        if (!active) continue;
        const long long row = start + lane;
        const bool valid = row < shape.queries && (!causal || key <= row);
        T score = 0, weight_grad = 0;
        for (long long d = 0; d < shape.dim; ++d) score += queries[lane][d] * key_rows[warp][d];
        for (long long d = 0; d < shape.value_dim; ++d) weight_grad += grads[lane][d] * value_rows[warp][d];
        const T weight = valid ? exp(score * scale - tile_lse[lane]) : (T)0;
        const u64 element = ((u64)blockIdx.x * shape.queries + row) * shape.keys + key;
        const T kept = agnostic_dropped((T)1, AGNOSTIC_DROPOUT_ARGUMENTS, element);  // 1 / keep, 0, or 1
        weights[warp][lane] = weight * kept;
        score_grads[warp][lane] = weight * (weight_grad * kept - corrections[lane]);
        __syncwarp();
        for (int r = 0; r < PER_LANE; ++r) {
            const long long d = lane + 32 * r;
            if (d < shape.dim) {
                T sum = key_out[r];
                for (int i = 0; i < AGNOSTIC_ATTENTION_TILE; ++i) sum += score_grads[warp][i] * queries[i][d];
                key_out[r] = sum;
            }
            if (d < shape.value_dim) {
                T sum = value_out[r];
                for (int i = 0; i < AGNOSTIC_ATTENTION_TILE; ++i) sum += weights[warp][i] * grads[i][d];
                value_out[r] = sum;
            }
        }
        __syncwarp();
    }
    if (!active) return;
    T* gk = grad_k + k_offset + key * shape.k[2];
    T* gv = grad_v + v_offset + key * shape.v[2];
    for (int r = 0; r < PER_LANE; ++r) {
        const long long d = lane + 32 * r;
        if (d < shape.dim) gk[d] = key_out[r] * scale;
        if (d < shape.value_dim) gv[d] = value_out[r];
    }
}
"""
ATTENTION_TILE = 32  # keys (or queries) a block brings into shared memory at a time, as the source has it
ATTENTION_WARPS = 8  # query (or key) rows a block computes, a warp each
# The head sizes each instance takes: float's shared tiles fit 48 KiB up to 128, double's up to 64.
ATTENTION_MAX_DIMS = {numpy.dtype(numpy.float32): (32, 64, 128), numpy.dtype(numpy.float64): (32, 64)}

for _name in ("agnostic_attention_forward", "agnostic_attention_backward_query", "agnostic_attention_backward_key"):
    for _max_dim in (32, 64, 128):
        _declares(f"{_name}_{_max_dim}", [dtype for dtype, dims in ATTENTION_MAX_DIMS.items() if _max_dim in dims])(
            _template(_name, _ATTENTION_SOURCE, _max_dim))


# ----- kernels whose source comes at run time (agnostic.cuda.jiterator's, from a user's code string) ---------------
def runtime_kernel(declared):
    """The CuPy kernel of ``declared``, a ``Kernel`` made at run time rather than declared here (jiterator builds
    one from its caller's C++ source): built once per distinct kernel, kept in the one cache beside the others."""
    key = ("runtime", declared.kind, declared.name, declared.source, declared.in_params, declared.out_params,
           tuple(declared.options), declared.preamble)
    found = _compiled.get(key)
    if found is None:
        found = _compiled[key] = declared.build(cupy_loader.require_cupy())
    return found
