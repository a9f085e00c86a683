"""Tensor layouts (``torch.layout``): agnostic's tensors are dense and strided, so ``strided`` is the only one."""


class layout:
    """How a tensor's elements are laid out in memory, as ``torch.layout``; agnostic has ``agnostic.strided`` only
    (dense arrays with strides), which ``Tensor.layout`` returns.

        >>> agnostic.zeros(2).layout
        agnostic.strided
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"agnostic.{self.name}"

    def __reduce__(self):  # pickles as the one object of its name, as PyTorch's layouts do
        return self.name


strided = layout("strided")
