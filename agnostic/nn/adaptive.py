"""AdaptiveLogSoftmaxWithLoss: the adaptive softmax for large output vocabularies, as torch.nn's."""

import collections
import itertools

import agnostic

from . import functional as F
from .containers import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Efficient softmax approximation for many classes (Grave et al., 2016), as
    ``torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0, head_bias=False)``: the
    head scores the ``cutoffs[0]`` most frequent classes and one entry per tail cluster; cluster ``i`` (classes
    ``cutoffs[i]`` to ``cutoffs[i + 1]``) goes through a projection to ``in_features // div_value ** (i + 1)``
    features. ``forward(input, target)`` returns ``_ASMoutput(output, loss)``: each target's log-probability and the
    mean negative log-likelihood.

        >>> _ = agnostic.manual_seed(0)
        >>> asm = agnostic.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 8], div_value=2.0)
        >>> output, loss = asm(agnostic.randn(3, 8), agnostic.tensor([0, 5, 9]))
        >>> output.shape, loss.shape
        (agnostic.Size([3]), agnostic.Size([]))
        >>> asm.log_prob(agnostic.randn(2, 8)).exp().sum(1)
        tensor([1.0000, 1.0000], grad_fn=<...>)
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        """Re-initialize the head and every cluster's projections."""
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_, target_):
        """``_ASMoutput(output, loss)`` for ``input_`` (N, in_features) and class indices ``target_`` (N,), or one
        unbatched example (in_features,) with a 0-D target."""
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        batch = target.shape[0]
        output = input.new_zeros(batch)
        head_columns = target.new_empty(batch)  # the head's entry each row reads: its class, or its cluster's
        used_rows = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            if i == 0:
                head_columns.index_copy_(0, rows, target[mask])
            else:
                relative = target[mask] - low
                cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                head_columns.index_fill_(0, rows, self.shortlist_size + i - 1)
                output = output.index_copy(0, rows, cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1))
            used_rows += rows.numel()
        if used_rows != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_columns.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            pieces.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return agnostic.cat(pieces, 1)

    def log_prob(self, input):
        """The log-probability of every class, (N, n_classes), for ``input`` (N, in_features).

            >>> asm = agnostic.nn.AdaptiveLogSoftmaxWithLoss(4, 3, cutoffs=[2], div_value=2.0)
            >>> asm.log_prob(agnostic.zeros(1, 4)).exp()
            tensor([[0.3333, 0.3333, 0.3333]], grad_fn=<...>)
        """
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row of ``input``: ``log_prob(input).argmax(dim=1)``, computing the tail
        clusters only for rows whose head prefers a cluster.

            >>> asm = agnostic.nn.AdaptiveLogSoftmaxWithLoss(4, 6, cutoffs=[2], div_value=2.0)
            >>> x = agnostic.randn(5, 4)
            >>> agnostic.equal(asm.predict(x), asm.log_prob(x).argmax(dim=1))
            True
        """
        head_output = self.head(input)
        output = agnostic.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if not bool(not_in_shortlist.any()):
            return output
        if bool(not_in_shortlist.all()):
            return agnostic.argmax(self._full_log_prob(input, head_output), dim=1)
        log_prob = self._full_log_prob(input[not_in_shortlist], head_output[not_in_shortlist])
        output[not_in_shortlist] = agnostic.argmax(log_prob, dim=1)
        return output


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
