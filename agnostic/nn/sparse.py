"""Embedding: a lookup table of learnable vectors."""

from ..autograd import no_grad
from ..ops import creation
from . import functional as F, init
from .module import Module
from .parameter import Parameter


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table looked up by integer indices, as ``torch.nn.Embedding``.

    The weight starts as N(0, 1) samples with the ``padding_idx`` row zeroed; that row gets no gradient.

        >>> _ = agnostic.manual_seed(0)
        >>> embedding = agnostic.nn.Embedding(10, 3)
        >>> embedding(agnostic.tensor([[1, 2], [4, 9]])).shape
        agnostic.Size([2, 2, 3])
        >>> agnostic.nn.Embedding(3, 2, padding_idx=0).weight[0]
        tensor([0., 0.], grad_fn=<...>)
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """N(0, 1) weights, with the padding row zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        text = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            text += ", padding_idx={padding_idx}"
        if self.max_norm is not None:
            text += ", max_norm={max_norm}"
        if self.norm_type != 2:
            text += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            text += ", scale_grad_by_freq={scale_grad_by_freq}"
        if self.sparse is not False:
            text += ", sparse=True"
        return text.format(**self.__dict__)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx, max_norm=max_norm,
                   norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
