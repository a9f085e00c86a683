"""What finishing a reduction does, for every engine: AVG's division by the group's size (PyTorch's integer AVG
floors), then the result written back into the caller's array where it was reduced in a wider copy (float16 and
bfloat16 as float32, bool as uint8)."""


def floors(dtype):
    """Whether AVG floors in ``dtype`` (integers, as PyTorch's) rather than divides: every other dtype divides,
    ml_dtypes' bfloat16 (NumPy kind "V") included.

        >>> import numpy
        >>> floors(numpy.dtype("int64")), floors(numpy.dtype("float16"))
        (True, False)
    """
    return dtype.kind in "iub"


def write_back(array, buffer, op, size):
    """A function finishing the reduction of ``array`` whose result is in ``buffer`` (the array itself, or its wider
    copy)."""
    def finish():
        if op == "avg":
            if floors(buffer.dtype):
                buffer[...] //= size
            else:
                buffer[...] /= size
        if buffer.dtype.itemsize > array.dtype.itemsize:
            array[...] = buffer.reshape(array.shape).astype(array.dtype)
    return finish
