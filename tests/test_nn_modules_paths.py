"""agnostic.nn.modules: PyTorch's torch.nn.modules.<part> import paths hold agnostic's own classes (the same
objects), the private bases PyTorch code subclasses, and a missing-name error for what agnostic lacks."""

import collections
import importlib

import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.modules as modules
from agnostic.nn.modules import utils
from agnostic.nn.modules._paths import PYTORCH_NAMES

PARTS = sorted(PYTORCH_NAMES)


@pytest.mark.parametrize("part", PARTS)
def test_each_part_holds_agnostic_nn_objects_themselves(part):
    module = importlib.import_module(f"agnostic.nn.modules.{part}")
    assert getattr(modules, part) is module
    for name in module.__all__:
        if name in vars(nn):
            assert getattr(module, name) is getattr(nn, name), name


def test_the_paths_real_programs_import():
    from agnostic.nn.modules.activation import MultiheadAttention
    from agnostic.nn.modules.container import ModuleList, Sequential
    from agnostic.nn.modules.linear import Linear, NonDynamicallyQuantizableLinear
    from agnostic.nn.modules.loss import _Loss, _WeightedLoss
    from agnostic.nn.modules.module import Module
    from agnostic.nn.modules.rnn import LSTM
    from agnostic.nn.modules.transformer import TransformerEncoderLayer

    assert LSTM is nn.LSTM and MultiheadAttention is nn.MultiheadAttention and Linear is nn.Linear
    assert Module is nn.Module and Sequential is nn.Sequential and ModuleList is nn.ModuleList
    assert TransformerEncoderLayer is nn.TransformerEncoderLayer
    assert issubclass(NonDynamicallyQuantizableLinear, Linear)
    assert type(nn.MultiheadAttention(4, 2).out_proj) is NonDynamicallyQuantizableLinear
    assert issubclass(nn.CrossEntropyLoss, _WeightedLoss) and issubclass(nn.MSELoss, _Loss)
    assert modules.rnn.LSTM is modules.LSTM is nn.LSTM


def test_private_bases_are_the_bases_of_agnostic_layers():
    assert isinstance(nn.Conv2d(1, 1, 3), modules.conv._ConvNd)
    assert isinstance(nn.ConvTranspose2d(1, 1, 3), modules.conv._ConvTransposeNd)
    assert isinstance(nn.BatchNorm2d(2), modules.batchnorm._BatchNorm)
    assert isinstance(nn.BatchNorm1d(2), modules.batchnorm._NormBase)
    assert isinstance(nn.InstanceNorm2d(2), modules.instancenorm._InstanceNorm)
    assert isinstance(nn.InstanceNorm2d(2), modules.batchnorm._NormBase)
    assert isinstance(nn.Dropout2d(), modules.dropout._DropoutNd)
    assert isinstance(nn.Dropout(), modules.dropout._DropoutNd)
    assert isinstance(nn.MaxPool2d(2), modules.pooling._MaxPoolNd)
    assert isinstance(nn.AvgPool2d(2), modules.pooling._AvgPoolNd)
    assert isinstance(nn.AdaptiveMaxPool2d(2), modules.pooling._AdaptiveMaxPoolNd)
    assert not isinstance(nn.AdaptiveAvgPool2d(2), modules.pooling._AdaptiveMaxPoolNd)
    assert not isinstance(nn.Linear(2, 2), modules.conv._ConvNd)


def test_a_loss_subclassing_the_private_base_works_as_in_pytorch():
    class SquaredError(modules.loss._Loss):
        def forward(self, input, target):
            error = (input - target) ** 2
            return error.mean() if self.reduction == "mean" else error.sum() if self.reduction == "sum" else error

    x, y = agnostic.tensor([1.0, 2.0, 4.0]), agnostic.tensor([0.0, 0.0, 0.0])
    assert SquaredError()(x, y).item() == pytest.approx(7.0)
    assert SquaredError(reduction="sum")(x, y).item() == pytest.approx(21.0)
    with pytest.warns(UserWarning, match="size_average"):  # PyTorch's legacy arguments, as PyTorch warns
        assert SquaredError(size_average=False)(x, y).item() == pytest.approx(21.0)

    class Weighted(modules.loss._WeightedLoss):
        def forward(self, input, target):
            return (self.weight * (input - target) ** 2).sum()

    assert Weighted(weight=agnostic.tensor([1.0, 0.0, 1.0]))(x, y).item() == pytest.approx(17.0)
    assert "weight" in dict(Weighted(weight=agnostic.ones(3)).named_buffers())


def test_star_import_gives_pytorchs_all_less_what_agnostic_lacks():
    namespace = {}
    exec("from agnostic.nn.modules.loss import *", namespace)
    assert namespace["MSELoss"] is nn.MSELoss and "_Loss" not in namespace
    assert set(modules.loss.__all__) <= set(PYTORCH_NAMES["loss"].split("|")[0].split())
    assert "Linear" in modules.__all__ and "LSTM" in modules.__all__


def test_a_pytorch_name_agnostic_lacks_raises_the_missing_name_error():
    with pytest.raises(AttributeError, match=r"agnostic.nn.modules.container' has no attribute 'Container': "
                                             r"agnostic does not provide torch.nn.modules.container.Container; "
                                             r".*coverage"):
        modules.container.Container
    with pytest.raises(AttributeError, match="does not provide torch.nn.modules.module.register_module_forward_hook"):
        modules.module.register_module_forward_hook
    with pytest.raises(AttributeError, match=r"has no attribute 'NotAPyTorchName'$"):
        modules.rnn.NotAPyTorchName
    with pytest.raises(AttributeError, match="has no attribute '_private'$"):
        modules.conv._private


def test_argument_helpers_follow_pytorch():
    assert utils._single(3) == (3,) and utils._pair(3) == (3, 3) and utils._triple(1) == (1, 1, 1)
    assert utils._quadruple(0) == (0, 0, 0, 0) and utils._pair([1, 2]) == (1, 2) and utils._pair(range(2)) == (0, 1)
    assert utils._pair.__name__ == "_pair"
    assert utils._reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    assert utils._list_with_default([None, 3], [8, 5, 6, 7]) == [6, 3]
    assert utils._list_with_default(4, [1, 2]) == 4
    with pytest.raises(ValueError, match="at least 3"):
        utils._list_with_default([None, 3], [1, 2])


def test_consume_prefix_strips_keys_and_metadata():
    state = collections.OrderedDict([("module.0.weight", 1), ("module.0.bias", 2), ("other", 3)])
    state._metadata = collections.OrderedDict([("", {"version": 1}), ("module", {"version": 1}),
                                               ("module.0", {"version": 1})])
    utils.consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == ["other", "0.weight", "0.bias"]
    assert list(state._metadata) == ["", "0"]


def test_consume_prefix_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present as reference

    def state():
        made = collections.OrderedDict([("module.a", 1), ("b", 2), ("module.c.d", 3)])
        made._metadata = collections.OrderedDict([("", {}), ("module", {}), ("module.c", {}), ("x", {})])
        return made

    ours, theirs = state(), state()
    utils.consume_prefix_in_state_dict_if_present(ours, "module.")
    reference(theirs, "module.")
    assert list(ours.items()) == list(theirs.items())
    assert list(ours._metadata.items()) == list(theirs._metadata.items())
    assert torch.nn.modules.utils._pair(5) == utils._pair(5)


def test_the_table_is_pytorchs():
    torch = pytest.importorskip("torch")
    if tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) != (2, 14):
        pytest.skip(f"the table is PyTorch 2.14's names (this is {torch.__version__})")
    for part, names in PYTORCH_NAMES.items():
        theirs = importlib.import_module(f"torch.nn.modules.{part}")
        exported, _, imported = names.partition("|")
        assert exported.split() == list(theirs.__all__), part
        assert all(hasattr(theirs, name) for name in imported.split()), part
    # every layer agnostic.nn has is reachable where PyTorch's code imports it
    for part in PARTS:
        theirs, ours = importlib.import_module(f"torch.nn.modules.{part}"), getattr(modules, part)
        for name in theirs.__all__:
            if name in vars(nn):
                assert getattr(ours, name) is getattr(nn, name), f"{part}.{name}"
    assert getattr(torch.nn.modules, "LSTM") and modules.LSTM is nn.LSTM
