"""nn.Module and Parameter: registration, traversal, conversion, state_dict, hooks, repr, containers."""

import copy
import pickle
from collections import OrderedDict

import numpy
import pytest

import agnostic
import agnostic.nn as nn
from agnostic._tensor_classes import GradTensor

CPU = agnostic.device("cpu")


def host(tensor):
    return tensor.detach().cpu().numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", agnostic.zeros(1))
        self.register_buffer("scratch", agnostic.ones(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# ----- Parameter --------------------------------------------------------------------------------------------------

def test_parameter_is_a_leaf_sharing_memory(device):
    data = agnostic.ones(2, 3, device=device)
    param = nn.Parameter(data)
    assert isinstance(param, GradTensor) and isinstance(param, agnostic.Tensor)
    assert param.requires_grad and param.is_leaf and param.grad_fn is None
    assert param.device == device and param.shape == (2, 3)
    data.fill_(5.0)
    assert host(param).tolist() == [[5.0] * 3] * 2
    frozen = nn.Parameter(data, requires_grad=False)
    assert isinstance(frozen, nn.Parameter) and not frozen.requires_grad


def test_parameter_defaults_and_repr():
    empty = nn.Parameter()
    assert empty.shape == (0,) and empty.requires_grad
    param = nn.Parameter(agnostic.tensor([1.0, 2.0]))
    assert repr(param) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert str(param) == repr(param)
    assert repr(nn.Parameter(agnostic.tensor([1.0]), requires_grad=False)) == "Parameter containing:\ntensor([1.])"
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(agnostic.tensor([1, 2]))


def test_parameter_deepcopy_and_pickle(device):
    param = nn.Parameter(agnostic.arange(3.0, device=device))
    clone = copy.deepcopy(param)
    assert type(clone) is nn.Parameter and clone is not param and clone.requires_grad and clone.device == device
    clone.data.fill_(0.0)
    assert host(param).tolist() == [0.0, 1.0, 2.0]
    restored = pickle.loads(pickle.dumps(param))
    assert type(restored) is nn.Parameter and restored.is_leaf and host(restored).tolist() == [0.0, 1.0, 2.0]


# ----- registration -------------------------------------------------------------------------------------------

def test_attribute_assignment_registers():
    net = Net()
    assert list(net._parameters) == []
    assert list(net._modules) == ["fc1", "act", "fc2"]
    assert list(net._buffers) == ["steps", "scratch"]
    assert net.fc2.bias is None and "bias" in net.fc2._parameters
    net.extra = nn.Parameter(agnostic.zeros(2))
    assert "extra" in net._parameters and "extra" not in net.__dict__
    net.extra = None
    assert net._parameters["extra"] is None
    with pytest.raises(TypeError, match="cannot assign 'agnostic.FloatTensor' as parameter 'extra'"):
        net.extra = agnostic.zeros(2)
    net.steps = agnostic.ones(1)
    assert host(net._buffers["steps"]).tolist() == [1.0]
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'steps'"):
        net.steps = 3
    with pytest.raises(TypeError, match="as child module 'act'"):
        net.act = 3
    del net.act
    assert "act" not in net._modules
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'act'"):
        net.act


def test_register_errors():
    module = nn.Module()
    assert_key_error(lambda: module.register_buffer("a.b", agnostic.zeros(1)), 'buffer name can\'t contain "."')
    assert_key_error(lambda: module.register_buffer("", agnostic.zeros(1)), 'buffer name can\'t be empty string ""')
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        module.register_buffer(3, agnostic.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'list' object to buffer 'b'"):
        module.register_buffer("b", [1])
    module.plain = 5
    assert_key_error(lambda: module.register_buffer("plain", agnostic.zeros(1)), "attribute 'plain' already exists")
    assert_key_error(lambda: module.register_parameter("plain", None), "attribute 'plain' already exists")
    with pytest.raises(TypeError, match=r"cannot assign 'agnostic.FloatTensor' object to parameter 'p' "
                                        r"\(agnostic.nn.Parameter or None required\)"):
        module.register_parameter("p", agnostic.zeros(1))
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        module.add_module("m", 3)
    assert_key_error(lambda: module.add_module("a.b", nn.ReLU()), 'module name can\'t contain ".", got: a.b')
    leaf = nn.Parameter(agnostic.ones(2))
    non_leaf = leaf * 2
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        module.register_parameter("q", _as_parameter_class(non_leaf))
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Broken(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(agnostic.ones(1))
        Broken()


def assert_key_error(action, message):
    with pytest.raises(KeyError) as error:
        action()
    assert error.value.args[0] == message


def _as_parameter_class(tensor):
    """A Parameter-typed object with a grad_fn (what PyTorch refuses to register)."""
    tensor.__class__ = nn.Parameter
    return tensor


def test_register_buffer_persistence_and_add_module():
    module = nn.Module()
    module.register_buffer("kept", agnostic.ones(1))
    module.register_buffer("dropped", agnostic.ones(1), persistent=False)
    module.register_buffer("nothing", None)
    module.add_module("child", nn.Linear(1, 1))
    module.register_module("other", None)
    assert list(module.state_dict()) == ["kept", "child.weight", "child.bias"]
    assert [name for name, _ in module.named_buffers()] == ["kept", "dropped"]
    assert module.get_submodule("child") is module.child
    assert module.get_parameter("child.weight") is module.child.weight
    assert module.get_buffer("kept") is module.kept


# ----- traversal ----------------------------------------------------------------------------------------------

def test_traversal_orders_and_deduplication():
    net = Net()
    net.shared = net.fc1
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "shared.weight", "shared.bias"]
    assert len(list(net.parameters())) == 3
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert list(net.children()) == [net.fc1, net.act, net.fc2]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules(prefix="net")] == ["net", "net.fc1", "net.act", "net.fc2"]
    assert list(net.modules())[0] is net
    assert [n for n, _ in net.named_parameters(prefix="m", recurse=False)] == []
    assert [n for n, _ in net.fc1.named_parameters(recurse=False)] == ["weight", "bias"]
    assert "fc1" in dir(net) and "steps" in dir(net)


def test_apply_train_eval_requires_grad():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.ReLU()))
    visited = []
    assert net.apply(lambda m: visited.append(type(m).__name__)) is net
    assert visited == ["Linear", "Dropout", "ReLU", "Sequential", "Sequential"]
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad(device):
    net = nn.Linear(3, 2).to(device)
    net(agnostic.ones(4, 3, device=device)).sum().backward()
    grad = net.weight.grad
    assert grad is not None
    net.zero_grad(set_to_none=False)
    assert net.weight.grad is grad and float(host(grad).sum()) == 0.0
    net.zero_grad()
    assert net.weight.grad is None and net.bias.grad is None


# ----- device and dtype conversion ----------------------------------------------------------------------------

def test_to_device_moves_parameters_and_buffers_in_place(device):
    net = Net()
    net.fc1.weight.grad = agnostic.ones(4, 3)
    weight = net.fc1.weight
    values = host(weight)
    assert net.to(device) is net
    assert net.fc1.weight is weight and isinstance(weight, nn.Parameter) and weight.requires_grad
    for tensor in list(net.parameters()) + list(net.buffers()) + [weight.grad]:
        assert tensor.device == device
    assert numpy.array_equal(host(weight), values)
    out = net(agnostic.ones(5, 3, device=device))
    assert out.device == device and out.shape == (5, 2)
    net.cpu()
    assert all(t.device == CPU for t in list(net.parameters()) + list(net.buffers()))


def test_cuda_method(cuda_device):
    net = Net().cuda(cuda_device)
    assert all(t.device == cuda_device for t in list(net.parameters()) + list(net.buffers()))


def test_dtype_conversions_only_touch_floating_tensors(device):
    net = nn.Module()
    net.w = nn.Parameter(agnostic.ones(2, device=device))
    net.register_buffer("count", agnostic.tensor(3, device=device))
    net.register_buffer("mean", agnostic.zeros(2, device=device))
    net.double()
    assert net.w.dtype is agnostic.float64 and net.mean.dtype is agnostic.float64
    assert net.count.dtype is agnostic.int64
    net.half()
    assert net.w.dtype is agnostic.float16 and net.count.dtype is agnostic.int64
    net.float()
    assert net.w.dtype is agnostic.float32
    net.to(agnostic.float64)
    assert net.w.dtype is agnostic.float64 and net.count.dtype is agnostic.int64
    net.to(device, agnostic.float32)
    assert net.w.dtype is agnostic.float32 and isinstance(net.w, nn.Parameter)
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got "
                                        "desired dtype=agnostic.int64"):
        net.to(agnostic.int64)


# ----- state_dict -----------------------------------------------------------------------------------------------

def test_state_dict_contents(device):
    net = Net().to(device)
    state = net.state_dict()
    assert isinstance(state, OrderedDict)
    assert list(state) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert type(state["fc1.weight"]) is agnostic.Tensor and not state["fc1.weight"].requires_grad
    assert state["fc1.weight"].data_ptr() == net.fc1.weight.data_ptr()
    kept = net.state_dict(keep_vars=True)
    assert kept["fc1.weight"] is net.fc1.weight
    assert state._metadata[""] == {"version": 1} and "fc1" in state._metadata


def test_state_dict_round_trip_across_devices(device):
    source, target = Net(), Net().to(device)
    source.steps.fill_(7.0)
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items()):
        assert b.device == device and numpy.array_equal(host(a), host(b)), name
    weight = target.fc1.weight
    target.load_state_dict(source.state_dict())
    assert target.fc1.weight is weight  # copied in place


def test_load_state_dict_strict_errors():
    net = Net()
    state = net.state_dict()
    del state["fc1.bias"]
    state["fc3.weight"] = agnostic.zeros(1)
    state["extra"] = agnostic.zeros(1)
    with pytest.raises(RuntimeError) as error:
        net.load_state_dict(state)
    assert str(error.value) == (
        "Error(s) in loading state_dict for Net:\n"
        '\tMissing key(s) in state_dict: "fc1.bias". \n'
        '\tUnexpected key(s) in state_dict: "fc3.weight", "extra". ')
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["fc3.weight", "extra"]
    assert "missing_keys=['fc1.bias']" in repr(result)


def test_load_state_dict_size_mismatch_and_type_errors():
    net = Net()
    state = net.state_dict()
    state["fc1.weight"] = agnostic.zeros(2, 3)
    with pytest.raises(RuntimeError) as error:
        net.load_state_dict(state, strict=False)
    assert str(error.value) == (
        "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc1.weight: copying a param with shape "
        "agnostic.Size([2, 3]) from checkpoint, the shape in current model is agnostic.Size([4, 3]).")
    state["fc1.weight"] = [1.0]
    with pytest.raises(RuntimeError, match='While copying the parameter named "fc1.weight", expected '
                                           "agnostic.Tensor or Tensor-like object from checkpoint"):
        net.load_state_dict(state)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>."):
        net.load_state_dict([])


def test_non_persistent_buffer_in_state_dict_is_unexpected():
    net = Net()
    state = net.state_dict()
    state["scratch"] = agnostic.ones(2)
    assert net.load_state_dict(state, strict=False).unexpected_keys == ["scratch"]


def test_load_state_dict_assign(device):
    net = nn.Linear(2, 2)
    state = {"weight": agnostic.ones(2, 2, device=device), "bias": agnostic.zeros(2, device=device)}
    net.load_state_dict(state, assign=True)
    assert isinstance(net.weight, nn.Parameter) and net.weight.requires_grad and net.weight.device == device
    assert net.weight.data_ptr() == state["weight"].data_ptr()


def test_batchnorm_state_dict_without_num_batches_tracked_loads():
    bn = nn.BatchNorm1d(3)
    state = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert bn.load_state_dict(state).missing_keys == []  # a plain dict: PyTorch's version-1 compatibility
    versioned = bn.state_dict()
    del versioned["num_batches_tracked"]
    assert nn.BatchNorm1d(3).load_state_dict(versioned, strict=False).missing_keys == ["num_batches_tracked"]


def test_deepcopy_module(device):
    net = Net().to(device)
    clone = copy.deepcopy(net)
    assert clone.fc1.weight is not net.fc1.weight and isinstance(clone.fc1.weight, nn.Parameter)
    assert clone.fc1.weight.device == device
    assert numpy.array_equal(host(clone.fc1.weight), host(net.fc1.weight))
    clone.fc1.weight.data.fill_(0.0)
    assert host(net.fc1.weight).any()
    restored = pickle.loads(pickle.dumps(net))
    assert type(restored) is Net and isinstance(restored.fc2.weight, nn.Parameter)
    assert restored.fc1.weight.device == device and list(restored.state_dict()) == list(net.state_dict())
    assert numpy.array_equal(host(restored.fc1.bias), host(net.fc1.bias))


# ----- hooks ----------------------------------------------------------------------------------------------------

def test_forward_pre_hooks_and_hooks():
    module = nn.Identity()
    calls = []
    pre = module.register_forward_pre_hook(lambda m, args: calls.append(("pre", args)) or (args[0] + 1,))
    post = module.register_forward_hook(lambda m, args, out: calls.append(("post", args, out)) or out * 10)
    x = agnostic.tensor([1.0])
    assert module(x).tolist() == [20.0]
    assert calls[0][0] == "pre" and calls[1][0] == "post" and calls[1][1][0].tolist() == [2.0]
    pre.remove()
    post.remove()
    pre.remove()  # harmless twice
    assert module(x).tolist() == [1.0] and len(calls) == 2


def test_hook_order_prepend_kwargs_and_context_manager():
    order = []

    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    module = Scale()
    module.register_forward_hook(lambda m, a, o: order.append("first"))
    module.register_forward_hook(lambda m, a, o: order.append("prepended"), prepend=True)
    module.register_forward_pre_hook(lambda m, args, kwargs: (args, {"factor": 3.0}), with_kwargs=True)
    with module.register_forward_hook(lambda m, a, kw, o: order.append(("kw", kw)), with_kwargs=True):
        assert module(agnostic.tensor([2.0])).tolist() == [6.0]
    assert order == ["prepended", "first", ("kw", {"factor": 3.0})]
    module(agnostic.tensor([2.0]))
    assert order[-1] == "first"
    bad = module.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        module(agnostic.tensor([1.0]))
    bad.remove()


def test_always_call_hook_runs_when_forward_raises():
    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    module = Failing()
    module.register_forward_hook(lambda m, a, o: seen.append("always"), always_call=True)
    module.register_forward_hook(lambda m, a, o: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        module(agnostic.ones(1))
    assert seen == ["always"]


def test_missing_forward():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


# ----- repr -----------------------------------------------------------------------------------------------------

def test_module_repr():
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (fc1): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (act): ReLU()\n"
        "  (fc2): Linear(in_features=4, out_features=2, bias=False)\n"
        ")")
    nested = nn.Sequential(OrderedDict(block=nn.Sequential(nn.Tanh()), out=nn.Softmax(dim=1)))
    assert repr(nested) == (
        "Sequential(\n"
        "  (block): Sequential(\n"
        "    (0): Tanh()\n"
        "  )\n"
        "  (out): Softmax(dim=1)\n"
        ")")
    assert repr(nn.Module()) == "Module()"

    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.ReLU(inplace=True)

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(WithExtra()) == "WithExtra(\n  a=1\n  b=2\n  (inner): ReLU(inplace=True)\n)"


def test_module_list_repr_compresses_repeats():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    assert repr(layers) == (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3): ReLU()\n"
        "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
        ")")
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_layer_reprs():
    assert repr(nn.Conv2d(2, 4, 3, padding="same")) == \
        "Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)"
    assert repr(nn.Conv2d(2, 4, (3, 2), padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect")) == (
        "Conv2d(2, 4, kernel_size=(3, 2), stride=(1, 1), padding=(1, 1), dilation=(2, 2), groups=2, bias=False, "
        "padding_mode=reflect)")
    assert repr(nn.MaxPool2d(3)) == "MaxPool2d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(3)) == "AvgPool2d(kernel_size=3, stride=3, padding=0)"
    assert repr(nn.BatchNorm2d(3)) == \
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.LayerNorm((3, 4), bias=False)) == \
        "LayerNorm((3, 4), eps=1e-05, elementwise_affine=True, bias=False)"
    assert repr(nn.Embedding(3, 4, padding_idx=1)) == "Embedding(3, 4, padding_idx=1)"
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.GELU(approximate="tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert repr(nn.BCEWithLogitsLoss(pos_weight=agnostic.ones(3))) == "BCEWithLogitsLoss()"
    assert repr(nn.Identity()) == "Identity()"


# ----- containers -----------------------------------------------------------------------------------------------

def test_sequential(device):
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).to(device)
    x = agnostic.ones(2, 3, device=device)
    expected = seq[2](seq[1](seq[0](x)))
    assert numpy.allclose(host(seq(x)), host(expected))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and isinstance(seq[-1], nn.Linear)
    head = seq[:2]
    assert type(head) is nn.Sequential and len(head) == 2 and head[0] is seq[0]
    seq.append(nn.Tanh())
    assert list(seq._modules) == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and isinstance(seq[1], nn.Linear)
    seq.insert(0, nn.Identity())
    assert isinstance(seq[0], nn.Identity) and len(seq) == 4
    seq[0] = nn.Sigmoid()
    assert isinstance(seq[0], nn.Sigmoid)
    assert len(seq + nn.Sequential(nn.ReLU())) == 5
    with pytest.raises(IndexError, match="index 9 is out of range"):
        seq[9]
    named = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh())]))
    assert list(named._modules) == ["a", "b"] and named[1] is named.b


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    layers.append(nn.ReLU()).extend([nn.Tanh()])
    layers.insert(1, nn.Sigmoid())
    assert [type(m).__name__ for m in layers] == ["Linear", "Sigmoid", "Linear", "Linear", "ReLU", "Tanh"]
    assert type(layers[1:3]) is nn.ModuleList and isinstance(layers[-1], nn.Tanh)
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2", "3", "4"]
    layers += [nn.Identity()]
    assert len(layers) == 6
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        layers.extend(5)
    table = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    assert list(table.keys()) == ["a", "b"] and "a" in table and len(table) == 2
    table["c"] = nn.Tanh()
    table.update([("d", nn.Sigmoid())])
    assert list(table) == ["a", "b", "c", "d"]
    assert table.pop("b").__class__ is nn.ReLU and "b" not in table
    assert [n for n, _ in table.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="should be a \\(key, module\\) pair"):
        table.update([nn.ReLU()])
