"""Storages (UntypedStorage, TypedStorage, the legacy classes), set_, the resize forms, dim_order, the Python
callbacks (apply_, map_, map2_), from_file and register_post_accumulate_grad_hook, against PyTorch's behaviour."""

import warnings

import numpy
import pytest

import agnostic


@pytest.fixture(autouse=True)
def _quiet_typed_storage_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def test_untyped_storage_is_the_tensors_memory(device):
    x = agnostic.tensor([1, 2, 3], dtype=agnostic.int16, device=device)
    storage = x[1:].untyped_storage()
    assert storage.nbytes() == storage.size() == len(storage) == 6
    assert storage.element_size() == 1 and storage.device == x.device
    assert storage.data_ptr() == x.data_ptr() == x.untyped_storage().data_ptr()
    assert storage.tolist() == [1, 0, 2, 0, 3, 0]
    storage[2] = 9
    assert x.tolist() == [1, 9, 3]
    storage[4:6] = 0
    assert x.tolist() == [1, 9, 0]
    assert storage[0] == 1 and storage[-1] == 0
    with pytest.raises(IndexError, match="out of range"):
        storage[6]


def test_untyped_storage_bytes_match_pytorch(device):
    torch = pytest.importorskip("torch")
    values = [0.5, -2.0, 3.25]
    ours = agnostic.tensor(values, device=device).untyped_storage().tolist()
    assert ours == torch.tensor(values).untyped_storage().tolist()
    assert ours == list(numpy.array(values, numpy.float32).tobytes())


def test_untyped_storage_clone_copy_fill_resize(device):
    storage = agnostic.UntypedStorage([1, 2, 3], device=device)
    clone = storage.clone()
    assert clone.tolist() == [1, 2, 3] and clone.data_ptr() != storage.data_ptr()
    clone.fill_(7)
    assert storage.tolist() == [1, 2, 3] and clone.tolist() == [7, 7, 7]
    storage.copy_(clone)
    assert storage.tolist() == [7, 7, 7]
    with pytest.raises(RuntimeError, match="size does not match"):
        storage.copy_(agnostic.UntypedStorage(2, device=device))
    assert storage.resize_(5).nbytes() == 5 and storage.tolist()[:3] == [7, 7, 7]
    assert storage.resize_(1).tolist() == [7]
    assert storage.cpu().tolist() == [7]


def test_resize_of_a_storage_tensors_view_is_refused(device):
    x = agnostic.zeros(4, device=device)
    storage = x.untyped_storage()
    assert not storage.resizable()
    with pytest.raises(RuntimeError, match="tensor.resize_"):
        storage.resize_(100)
    assert storage.resize_(16) is storage  # the same size: nothing to move


def test_share_memory_of_a_fresh_storage_and_of_a_tensor():
    storage = agnostic.UntypedStorage([1, 2])
    assert not storage.is_shared()
    assert storage.share_memory_() is storage and storage.is_shared() and storage.tolist() == [1, 2]
    x = agnostic.zeros(2).share_memory_()
    assert x.untyped_storage().is_shared()
    with pytest.raises(RuntimeError, match="tensor.share_memory_"):
        agnostic.zeros(2).untyped_storage().share_memory_()


def test_typed_storage_reads_elements_and_warns_once(device):
    import agnostic.storage as storage_module

    storage_module._warned = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = agnostic.tensor([1.0, 2.0, 3.0], device=device)
        typed = x[1:].storage()
        x.storage()
    assert [str(w.message)[:26] for w in caught] == ["TypedStorage is deprecated"]
    assert typed.dtype is agnostic.float32 and typed.size() == len(typed) == 3
    assert typed[1] == 2.0 and typed[-1] == 3.0 and typed.tolist() == [1.0, 2.0, 3.0]
    assert typed.data_ptr() == x.data_ptr() and typed.nbytes() == 12 and typed.element_size() == 4
    assert isinstance(typed._untyped_storage, agnostic.UntypedStorage)
    typed[0] = 5
    assert x.tolist() == [5.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="slices"):
        typed[0:1]
    assert typed.double().dtype is agnostic.float64 and typed.double().tolist() == [5.0, 2.0, 3.0]


def test_legacy_storage_classes():
    torch = pytest.importorskip("torch")
    assert agnostic.FloatStorage(3).size() == 3
    assert agnostic.FloatStorage([1, 2]).tolist() == torch.FloatStorage([1, 2]).tolist() == [1.0, 2.0]
    assert agnostic.BoolStorage([1, 0]).tolist() == [True, False]
    assert agnostic.LongStorage([1, 2]).dtype is agnostic.int64
    assert isinstance(agnostic.zeros(1).storage(), agnostic.FloatStorage)
    assert not isinstance(agnostic.zeros(1).storage(), agnostic.DoubleStorage)
    assert agnostic.zeros(1, dtype=agnostic.complex64).storage_type() is agnostic.ComplexFloatStorage
    assert agnostic.zeros(1).storage().type() == "agnostic.FloatStorage"
    for name in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool",
                 "ComplexFloat", "ComplexDouble"):
        legacy = getattr(agnostic, name + "Storage")
        assert str(legacy(2).dtype).split(".")[1] == str(getattr(torch, name + "Storage")(2).dtype).split(".")[1]
    wrapped = agnostic.FloatStorage(wrap_storage=agnostic.UntypedStorage(8))
    assert wrapped.size() == 2


def test_set_to_a_storage_a_tensor_and_nothing(device):
    x = agnostic.arange(6.0, device=device)
    y = agnostic.tensor([], device=device).set_(x.untyped_storage(), 2, (2, 2), (1, 2))
    assert y.tolist() == [[2.0, 4.0], [3.0, 5.0]]
    y[0, 0] = 10
    assert x[2].item() == 10
    z = agnostic.tensor([], device=device).set_(x.storage(), 1, (3,))
    assert z.tolist() == [1.0, 10.0, 3.0] and z.storage_offset() == 1
    same = agnostic.tensor([], device=device).set_(x)
    assert same.data_ptr() == x.data_ptr() and same.shape == x.shape
    whole = agnostic.tensor([], dtype=agnostic.int16, device=device).set_(x.untyped_storage())
    assert whole.shape == (12,)
    assert agnostic.tensor([1.0], device=device).set_().shape == (0,)


def test_set_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = agnostic.arange(6.0)
    theirs = torch.arange(6.0)
    a = agnostic.tensor([], dtype=agnostic.int16).set_(ours.untyped_storage(), 1, (3,))
    b = torch.tensor([], dtype=torch.int16).set_(theirs.untyped_storage(), 1, (3,))
    assert a.tolist() == b.tolist()


def test_set_errors(device):
    x = agnostic.arange(6.0, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        agnostic.ones(2, requires_grad=True, device=device).set_(x)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        agnostic.tensor([], device=device).set_(x.untyped_storage(), 0, (10,))
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        agnostic.tensor([], device=device).set_(x.untyped_storage(), -1, (2,))
    with pytest.raises(RuntimeError, match="unequal size length"):
        agnostic.tensor([], device=device).set_(x.untyped_storage(), 0, (2,), (1, 2))
    with pytest.raises(RuntimeError, match="Could not set tensor"):
        agnostic.tensor([], dtype=agnostic.int64, device=device).set_(x)
    with pytest.raises(RuntimeError, match="Expected a Storage of type"):
        agnostic.tensor([], dtype=agnostic.int64, device=device).set_(x.storage())
    with pytest.raises(TypeError, match="invalid combination"):
        agnostic.tensor([], device=device).set_(5)


def test_deprecated_resize_forms(device):
    x = agnostic.arange(4.0, requires_grad=True, device=device)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 2)
    assert y.shape == (2, 2)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="preserving the number of elements"):
        agnostic.arange(6, device=device).resize(2, 2)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert agnostic.arange(4, device=device).resize_as(agnostic.zeros(2, 2)).shape == (2, 2)
    assert agnostic.resize_as_(agnostic.arange(6, device=device), agnostic.zeros(2, 2)).tolist() == [[0, 1], [2, 3]]
    assert agnostic.as_strided_(agnostic.arange(6, device=device), (2, 2), (1, 2)).tolist() == [[0, 2], [1, 3]]


def test_dim_order_and_const_data_ptr_match_pytorch():
    torch = pytest.importorskip("torch")
    cases = [lambda m: m.empty(2, 3, 5, 7), lambda m: m.empty(2, 3, 5, 7).transpose(1, 2),
             lambda m: m.empty(2, 3, 5, 7).permute(3, 1, 0, 2), lambda m: m.empty(1, 2, 3, 4),
             lambda m: m.empty(2, 3, 5, 7).to(memory_format=m.channels_last), lambda m: m.empty(4),
             lambda m: m.empty(3, 1).expand(3, 4)]
    for make in cases:
        assert make(agnostic).dim_order() == make(torch).dim_order()
    with pytest.raises(RuntimeError, match="unique dim order"):
        agnostic.empty(1, 2, 3, 4).dim_order(ambiguity_check=True)
    assert agnostic.empty(1, 2, 3, 4).dim_order(ambiguity_check=[agnostic.contiguous_format,
                                                                 agnostic.channels_last]) == (0, 1, 2, 3)
    with pytest.raises(TypeError, match="ambiguity_check"):
        agnostic.empty(2).dim_order(ambiguity_check="ILLEGAL")
    x = agnostic.zeros(3)
    assert x.const_data_ptr() == x.data_ptr()


def test_python_callbacks_on_cpu():
    x = agnostic.arange(4.0)
    assert x.apply_(lambda v: v * 2).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert x.map_(agnostic.ones(4), lambda a, b: a + b).tolist() == [1.0, 3.0, 5.0, 7.0]
    assert x.map2_(agnostic.ones(4), agnostic.full((4,), 2.0), lambda a, b, c: a * b * c).tolist() == \
        [2.0, 6.0, 10.0, 14.0]
    assert x.map_(agnostic.ones(1), lambda a, b: a - b).tolist() == [1.0, 5.0, 9.0, 13.0]
    assert agnostic.arange(3).apply_(lambda v: v * 1.7).tolist() == [0, 1, 3]  # truncated, as PyTorch
    with pytest.raises(RuntimeError, match="expanded size"):
        agnostic.ones(1).map_(agnostic.ones(4), lambda a, b: a)
    with pytest.raises(RuntimeError, match="requires grad"):
        agnostic.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(TypeError, match="must be real number, not str"):
        agnostic.ones(2).apply_(lambda v: "a")
    with pytest.raises(TypeError, match="expected agnostic.FloatTensor"):
        agnostic.ones(2).map_(agnostic.ones(2, dtype=agnostic.int64), lambda a, b: a)


def test_python_callbacks_refuse_device_tensors(device):
    x = agnostic.ones(2, device=device)
    if x.is_cpu:
        assert x.apply_(lambda v: v + 1).tolist() == [2.0, 2.0]
    else:
        with pytest.raises(TypeError, match="only implemented on CPU"):
            x.apply_(lambda v: v)


def test_from_file_private_and_shared(tmp_path, device):
    path = tmp_path / "values.bin"
    numpy.arange(4, dtype=numpy.float32).tofile(path)
    private = agnostic.from_file(str(path), shared=False, size=4, device=device)
    assert private.tolist() == [0.0, 1.0, 2.0, 3.0] and private.device == agnostic.device(device)
    assert agnostic.from_file(str(path), size=0).shape == (0,)
    shared = agnostic.from_file(str(path), shared=True, size=4)
    shared[0] = 9
    shared.numpy()  # the mapping's pages are the file's
    assert numpy.fromfile(path, numpy.float32).tolist() == [9.0, 1.0, 2.0, 3.0]
    assert agnostic.from_file(str(path), size=2, dtype=agnostic.int32).tolist() == \
        numpy.fromfile(path, numpy.int32)[:2].tolist()
    with pytest.raises(RuntimeError, match="smaller than the required mapping size <40>"):
        agnostic.from_file(str(path), size=10)
    with pytest.raises(RuntimeError, match="unable to open file"):
        agnostic.from_file(str(tmp_path / "missing.bin"), size=1)
    grown = agnostic.from_file(str(tmp_path / "new.bin"), shared=True, size=2)
    assert grown.tolist() == [0.0, 0.0] and (tmp_path / "new.bin").stat().st_size == 8
    assert agnostic.UntypedStorage.from_file(str(path), False, 8).nbytes() == 8


def test_from_file_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "values.bin")
    numpy.linspace(-1, 1, 6).tofile(path)
    ours = agnostic.from_file(path, size=6, dtype=agnostic.float64)
    assert ours.tolist() == torch.from_file(path, size=6, dtype=torch.float64).tolist()


def test_post_accumulate_grad_hook_steps_an_optimizer_in_backward():
    torch = pytest.importorskip("torch")

    def train(module, nn, optim):
        net = nn.Linear(3, 2)
        with module.no_grad():
            net.weight.copy_(module.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
            net.bias.copy_(module.tensor([0.01, -0.02]))
        optimizers = {p: optim.SGD([p], lr=0.1) for p in net.parameters()}
        seen = []

        def step(parameter):
            seen.append(parameter.grad.clone())
            optimizers[parameter].step()
            optimizers[parameter].zero_grad()
        handles = [p.register_post_accumulate_grad_hook(step) for p in net.parameters()]
        inputs = module.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
        for _ in range(2):
            net(inputs).pow(2).sum().backward()
        for handle in handles:
            handle.remove()
        net(inputs).sum().backward()  # no hook now: the gradient stays
        return net, seen

    ours, our_grads = train(agnostic, agnostic.nn, agnostic.optim)
    theirs, their_grads = train(torch, torch.nn, torch.optim)
    assert len(our_grads) == len(their_grads) == 4
    for a, b in zip(our_grads, their_grads):
        numpy.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5)
    assert ours.weight.grad is not None and ours.weight.grad.abs().sum().item() > 0


def test_post_accumulate_grad_hook_sees_the_accumulated_gradient_and_refuses_non_leaves(device):
    w = agnostic.tensor([1.0, 2.0], requires_grad=True, device=device)
    seen = []
    w.register_post_accumulate_grad_hook(lambda tensor: seen.append(tensor.grad.tolist()))
    (w * 3).sum().backward()
    (w * 2).sum().backward()
    assert seen == [[3.0, 3.0], [5.0, 5.0]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda tensor: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        agnostic.ones(2, device=device).register_post_accumulate_grad_hook(lambda tensor: None)
