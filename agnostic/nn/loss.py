"""Loss modules: MSELoss, L1Loss, CrossEntropyLoss, NLLLoss, BCELoss, BCEWithLogitsLoss."""

from . import functional as F
from .functional._loss import legacy_reduction
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce) if size_average is not None or reduce is not None \
            else reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error (``reduction`` 'mean', 'sum' or 'none').

        >>> loss = agnostic.nn.MSELoss()
        >>> loss(agnostic.tensor([1.0, 2.0, 3.0]), agnostic.tensor([1.0, 0.0, 0.0]))
        tensor(4.3333)
        >>> agnostic.nn.MSELoss(reduction="none")(agnostic.tensor([1.0, 2.0]), agnostic.tensor([0.0, 0.0]))
        tensor([1., 4.])
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error (``reduction`` 'mean', 'sum' or 'none').

        >>> agnostic.nn.L1Loss()(agnostic.tensor([1.0, 2.0, 3.0]), agnostic.tensor([1.0, 0.0, 0.0]))
        tensor(1.6667)
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices, with class ``weight`` and ``ignore_index``.

        >>> log_probs = agnostic.tensor([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]]).log()
        >>> agnostic.nn.NLLLoss()(log_probs, agnostic.tensor([0, 1]))
        tensor(0.4581)
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities, with ``weight``, ``ignore_index``
    and ``label_smoothing``.

        >>> logits = agnostic.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]], requires_grad=True)
        >>> loss = agnostic.nn.CrossEntropyLoss()(logits, agnostic.tensor([0, 1]))
        >>> loss
        tensor(0.3964, grad_fn=<...>)
        >>> loss.backward()
        >>> logits.grad
        tensor([[-0.1072,  0.0876,  0.0196],
                [ 0.1060, -0.2119,  0.1060]])
        >>> agnostic.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, agnostic.tensor([0, 1]))
        tensor(0.5047, grad_fn=<...>)
    """

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities in [0, 1].

        >>> agnostic.nn.BCELoss()(agnostic.tensor([0.9, 0.2]), agnostic.tensor([1.0, 0.0]))
        tensor(0.1643)
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (a stable sigmoid + BCE), with ``weight`` and ``pos_weight`` (the weight of
    positive examples, broadcast over the last dimension).

        >>> logits, target = agnostic.tensor([2.0, -1.0]), agnostic.tensor([1.0, 0.0])
        >>> agnostic.nn.BCEWithLogitsLoss()(logits, target)
        tensor(0.2201)
        >>> agnostic.nn.BCEWithLogitsLoss(pos_weight=agnostic.tensor([2.0]))(logits, target)
        tensor(0.2836)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)
