"""What finishing a reduction does, for every engine: AVG's division by the group's size (PyTorch's integer AVG
floors), then the result written back into the caller's array where it was reduced in a wider copy (float16 and
bfloat16 as float32, bool as uint8)."""


def write_back(array, buffer, op, size):
    """A function finishing the reduction of ``array`` whose result is in ``buffer`` (the array itself, or its wider
    copy)."""
    def finish():
        if op == "avg":
            if buffer.dtype.kind in "fc":
                buffer[...] /= size
            else:
                buffer[...] //= size
        if buffer.dtype.itemsize > array.dtype.itemsize:
            array[...] = buffer.reshape(array.shape).astype(array.dtype)
    return finish
