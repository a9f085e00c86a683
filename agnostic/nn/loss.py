"""Loss modules, as torch.nn: each holds its options and calls its agnostic.nn.functional form (with the
CosineSimilarity and PairwiseDistance modules the embedding losses are built on)."""

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


class SmoothL1Loss(_Loss):
    """``0.5 (x - y)^2 / beta`` where ``|x - y| < beta``, else ``|x - y| - 0.5 beta``.

        >>> agnostic.nn.SmoothL1Loss()(agnostic.tensor([0.5, 3.0]), agnostic.tensor([0.0, 0.0]))
        tensor(1.3125)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 (x - y)^2`` where ``|x - y| < delta``, else ``delta (|x - y| - 0.5 delta)``.

        >>> agnostic.nn.HuberLoss(delta=2.0)(agnostic.tensor([0.5, 3.0]), agnostic.tensor([0.0, 0.0]))
        tensor(2.0625)
    """

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities ``input`` from ``target`` (use ``reduction='batchmean'``
    for the mathematical definition).

        >>> loss = agnostic.nn.KLDivLoss(reduction="batchmean")
        >>> loss(agnostic.tensor([[0.25, 0.75]]).log(), agnostic.tensor([[0.5, 0.5]]))
        tensor(0.1438)
    """

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of rates (``log_input``: log-rates), optionally with Stirling's term.

        >>> agnostic.nn.PoissonNLLLoss()(agnostic.tensor([0.0, 1.0]), agnostic.tensor([1.0, 2.0]))
        tensor(0.8591)
    """

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of ``target`` under means ``input`` and variances ``var``.

        >>> loss = agnostic.nn.GaussianNLLLoss()
        >>> loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([0.0, 2.0]), agnostic.tensor([1.0, 4.0]))
        tensor(0.5966)
    """

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for ``target`` 1, ``max(0, cos(x1, x2) - margin)`` for ``target`` -1.

        >>> x1, x2 = agnostic.tensor([[1.0, 0.0], [1.0, 1.0]]), agnostic.tensor([[1.0, 1.0], [1.0, 1.0]])
        >>> agnostic.nn.CosineEmbeddingLoss()(x1, x2, agnostic.tensor([1.0, -1.0]))
        tensor(0.6464)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -target * (x1 - x2) + margin)``.

        >>> loss = agnostic.nn.MarginRankingLoss(margin=0.5)
        >>> loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([2.0, 1.0]), agnostic.tensor([1.0, 1.0]))
        tensor(0.7500)
    """

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for ``target`` 1, ``max(0, margin - x)`` for ``target`` -1.

        >>> agnostic.nn.HingeEmbeddingLoss()(agnostic.tensor([0.3, 0.3]), agnostic.tensor([1.0, -1.0]))
        tensor(0.5000)
    """

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-target * input))``.

        >>> agnostic.nn.SoftMarginLoss()(agnostic.tensor([2.0, -1.0]), agnostic.tensor([1.0, 1.0]))
        tensor(0.7201)
    """

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class binary cross entropy of logits, averaged over the classes.

        >>> agnostic.nn.MultiLabelSoftMarginLoss()(agnostic.tensor([[2.0, -1.0]]), agnostic.tensor([[1.0, 0.0]]))
        tensor(0.2201)
    """

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss of scores against class indices (``p`` 1 or 2, ``margin``, class ``weight``).

        >>> agnostic.nn.MultiMarginLoss()(agnostic.tensor([[0.1, 0.2, 0.4, 0.8]]), agnostic.tensor([3]))
        tensor(0.3250)
    """

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")
        super().__init__(weight, size_average, reduce, reduction)
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the ``p``-norm distance (``swap``: the
    smaller of d(anchor, negative) and d(positive, negative)).

        >>> a, p, n = agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]), agnostic.tensor([[1.0, 0.0]])
        >>> agnostic.nn.TripletMarginLoss()(a, p, n)
        tensor(5.0000)
    """

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss of (T, N, C) log-probabilities against unaligned targets.

        >>> log_probs = agnostic.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> agnostic.nn.CTCLoss()(log_probs, agnostic.tensor([[1]]), [2], [1])
        tensor(0.2877)
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class CosineSimilarity(Module):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim``.

        >>> agnostic.nn.CosineSimilarity(dim=0)(agnostic.tensor([1.0, 0.0]), agnostic.tensor([1.0, 1.0]))
        tensor(0.7071)
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dimension.

        >>> agnostic.nn.PairwiseDistance()(agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss of scores against class indices ended by -1.

        >>> loss = agnostic.nn.MultiLabelMarginLoss()
        >>> loss(agnostic.tensor([[0.1, 0.2, 0.4, 0.8]]), agnostic.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for a given ``distance_function``
    (``PairwiseDistance()`` by default).

        >>> a, p, n = agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]), agnostic.tensor([[1.0, 0.0]])
        >>> agnostic.nn.TripletMarginWithDistanceLoss(distance_function=agnostic.nn.PairwiseDistance(p=1))(a, p, n)
        tensor(7.0000)
    """

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated alias of ``NLLLoss`` (for (N, C, H, W) log-probabilities): the same loss.

        >>> log_probs = agnostic.full((1, 2, 1, 1), 0.5).log()
        >>> agnostic.nn.NLLLoss2d()(log_probs, agnostic.tensor([[[1]]]))
        tensor(0.6931)
    """


__all__ = ["BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss", "CosineSimilarity", "CrossEntropyLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "NLLLoss2d",
           "PairwiseDistance", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss"]
