"""agnostic.optim.swa_utils: AveragedModel's averages, update_bn's statistics and SWALR's rates are PyTorch's."""

import copy

import numpy as np
import pytest

import agnostic
from agnostic.optim import swa_utils


def _model(library, device=None):
    library.manual_seed(0)
    kwargs = {"device": device} if library is agnostic else {}
    return library.nn.Sequential(library.nn.Linear(3, 4, **kwargs), library.nn.BatchNorm1d(4, **kwargs),
                                 library.nn.ReLU(), library.nn.Linear(4, 2, **kwargs))


def _set_weights(library, model, values):
    with library.no_grad():
        for p, value in zip(model.parameters(), values):
            p.copy_(library.tensor(value, dtype=p.dtype, device=p.device))


def _snapshots(model, count):
    rng = np.random.default_rng(1)
    return [[rng.standard_normal(tuple(p.shape)) for p in model.parameters()] for _ in range(count)]


def test_deepcopy_of_a_module_is_independent(device):
    model = _model(agnostic, device)
    clone = copy.deepcopy(model)
    for a, b in zip(model.parameters(), clone.parameters()):
        assert a is not b and isinstance(b, agnostic.nn.Parameter) and b.device == device
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    with agnostic.no_grad():
        clone[0].weight.add_(1.0)
    assert not np.array_equal(model[0].weight.detach().cpu().numpy(), clone[0].weight.detach().cpu().numpy())


def test_default_average_is_the_running_mean(device):
    model = _model(agnostic, device)
    averaged = swa_utils.AveragedModel(model)
    snapshots = _snapshots(model, 4)
    for values in snapshots:
        _set_weights(agnostic, model, values)
        averaged.update_parameters(model)
    assert averaged.n_averaged.item() == 4 and averaged.n_averaged.dtype == agnostic.int64
    for p, *values in zip(averaged.module.parameters(), *snapshots):
        np.testing.assert_allclose(p.detach().cpu().numpy(), np.mean(values, axis=0), rtol=1e-5, atol=1e-6)
    # the copy's forward runs on its own weights; the model's are untouched by averaging
    x = agnostic.ones(2, 3, device=device)
    averaged.eval()
    assert not np.allclose(averaged(x).detach().cpu().numpy(), model.eval()(x).detach().cpu().numpy())


@pytest.mark.parametrize("kind", ["swa", "ema", "swa_multi", "ema_multi", "buffers"])
def test_averaged_model_matches_pytorch(device, kind):
    torch = pytest.importorskip("torch")
    results = []
    for library, where in ((agnostic, device), (torch, None)):
        utils = swa_utils if library is agnostic else torch.optim.swa_utils
        model = _model(library, where).double()
        options = {"swa": {}, "ema": {"avg_fn": utils.get_ema_avg_fn(0.9)},
                   "swa_multi": {"multi_avg_fn": utils.get_swa_multi_avg_fn()},
                   "ema_multi": {"multi_avg_fn": utils.get_ema_multi_avg_fn(0.8)},
                   "buffers": {"use_buffers": True, "multi_avg_fn": utils.get_ema_multi_avg_fn(0.5)}}[kind]
        averaged = utils.AveragedModel(model, **options)
        for step, values in enumerate(_snapshots(model, 5)):
            _set_weights(library, model, values)
            model.train()
            model(library.tensor(np.linspace(-1, 1, 6 * 3).reshape(6, 3) * (step + 1), dtype=library.float64,
                                 **({"device": where} if library is agnostic else {})))
            averaged.update_parameters(model)
        results.append([t.detach().cpu().numpy() for t in averaged.state_dict().values()])
    assert len(results[0]) == len(results[1])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-12)


def test_averaged_model_moves_its_copy_to_device(device):
    model = _model(agnostic, "cpu")
    averaged = swa_utils.AveragedModel(model, device=device)
    assert all(p.device == device for p in averaged.module.parameters())
    assert averaged.n_averaged.device == device
    averaged.update_parameters(model)
    np.testing.assert_array_equal(averaged.module[0].weight.detach().cpu().numpy(), model[0].weight.detach().numpy())


def test_avg_fn_and_multi_avg_fn_are_exclusive():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(_model(agnostic), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        swa_utils.get_ema_avg_fn(1.5)


def test_update_bn_recomputes_running_statistics(device):
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((8, 3)) * 2 + 1 for _ in range(3)]
    model = agnostic.nn.Sequential(agnostic.nn.BatchNorm1d(3, momentum=0.3, device=device)).double()
    model.eval()
    loader = [(agnostic.tensor(b, device=device), agnostic.zeros(8)) for b in batches]
    swa_utils.update_bn(loader, model)
    whole = np.concatenate(batches)
    bn = model[0]
    np.testing.assert_allclose(bn.running_mean.cpu().numpy(), whole.mean(0), rtol=1e-10)
    # cumulative average of each batch's unbiased variance
    np.testing.assert_allclose(bn.running_var.cpu().numpy(), np.mean([b.var(0, ddof=1) for b in batches], axis=0),
                               rtol=1e-10)
    assert bn.momentum == 0.3 and not model.training and bn.num_batches_tracked.item() == 3


def test_update_bn_moves_batches_and_leaves_instance_norm_alone(device):
    instance = agnostic.nn.InstanceNorm1d(2, track_running_stats=True)
    with agnostic.no_grad():
        instance.running_mean.fill_(5.0)
    model = agnostic.nn.Sequential(agnostic.nn.BatchNorm1d(2), instance).to(device)
    swa_utils.update_bn([agnostic.tensor([[[1.0, 3.0], [2.0, 2.0]]])], model, device=device)
    # not reset, its momentum kept: one ordinary update towards the (zero) mean of batch-normalized values
    np.testing.assert_allclose(instance.running_mean.cpu().numpy(), [4.5, 4.5], rtol=1e-6)
    assert instance.momentum == 0.1
    np.testing.assert_allclose(model[0].running_mean.cpu().numpy(), [2.0, 2.0])
    model = agnostic.nn.Linear(2, 2)
    swa_utils.update_bn([agnostic.ones(1, 2)], model)  # no batch norm: nothing to do, no error


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_rates_match_pytorch(strategy, anneal_epochs):
    torch = pytest.importorskip("torch")
    rates = []
    for library, utils in ((agnostic, swa_utils), (torch, None)):
        utils = utils or torch.optim.swa_utils
        params = [library.nn.Parameter(library.zeros(1)), library.nn.Parameter(library.zeros(1))]
        optimizer = library.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=1.0)
        scheduler = utils.SWALR(optimizer, swa_lr=[0.05, 0.2], anneal_epochs=anneal_epochs,
                                anneal_strategy=strategy)
        seen = [scheduler.get_last_lr()]
        for _ in range(7):
            optimizer.step()
            scheduler.step()
            seen.append(scheduler.get_last_lr())
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)


def test_swalr_linear_by_hand_and_state_dict():
    optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
    scheduler = swa_utils.SWALR(optimizer, swa_lr=0.2, anneal_epochs=4, anneal_strategy="linear")
    rates = []
    for _ in range(5):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    np.testing.assert_allclose(rates, [0.8, 0.6, 0.4, 0.2, 0.2], rtol=1e-12)  # 1 -> 0.2 in 4 equal steps
    state = scheduler.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state and state["_anneal_strategy"] == "linear"
    other = swa_utils.SWALR(optimizer, swa_lr=0.3, anneal_strategy="cos")
    other.load_state_dict(state)
    assert other.anneal_func(0.5) == 0.5 and other.anneal_epochs == 4


def test_swalr_refuses_bad_arguments():
    optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(optimizer, swa_lr=0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(optimizer, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length"):
        swa_utils.SWALR(optimizer, swa_lr=[0.1, 0.2])
