"""agnostic.utils.dlpack: PyTorch's ``torch.utils.dlpack``: ``from_dlpack``, the legacy ``to_dlpack`` capsule and
the ``DLDeviceType`` enumeration."""

from .._backends.dlpack import DLDeviceType
from ..ops.creation import from_dlpack


def to_dlpack(tensor):
    """A legacy DLPack capsule (``"dltensor"``, DLPack 0.x) sharing ``tensor``'s memory, for ``from_dlpack`` of any
    library (import it once). Prefer passing the tensor itself to the consumer's ``from_dlpack``.

        >>> from agnostic.utils.dlpack import from_dlpack, to_dlpack
        >>> t = agnostic.arange(4)
        >>> capsule = to_dlpack(t)
        >>> capsule
        <capsule object "dltensor" at 0x...>
        >>> shared = from_dlpack(capsule)
        >>> shared[0] = -9
        >>> t
        tensor([-9,  1,  2,  3])
    """
    return tensor.__dlpack__()


__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
