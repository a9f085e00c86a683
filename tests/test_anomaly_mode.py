"""autograd.detect_anomaly / set_detect_anomaly: NaN gradients raise PyTorch's error, and a failing node's forward
traceback is reported as PyTorch reports it; nothing is kept while the mode is off."""

import warnings

import pytest

import agnostic
from agnostic.autograd import anomaly_mode


@pytest.fixture(autouse=True)
def _mode_off_after():
    yield
    anomaly_mode.set_anomaly_enabled(False)


def _nan_product(x, device):
    return (x * agnostic.tensor([float("nan"), 1.0], device=device)).sum()  # FORWARD LINE


def _messages(caught):
    return [str(w.message) for w in caught if w.category is UserWarning]  # not NumPy's divide-by-zero notes


def test_nan_gradient_raises_with_the_node_name_and_forward_traceback(device):
    x = agnostic.tensor([0.0, 1.0], requires_grad=True, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with agnostic.autograd.detect_anomaly():
            y = _nan_product(x, device)
            with pytest.raises(RuntimeError, match=r"^Function 'MulBackward0' returned nan values in its 0th "
                                                   r"output\.$"):
                y.backward()
    messages = _messages(caught)
    assert messages[0] == ("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                           "be enabled for debugging.")
    assert caught[0].filename == __file__
    assert messages[1].startswith("Error detected in MulBackward0. Traceback of forward call that caused the error:")
    assert "in _nan_product" in messages[1] and "# FORWARD LINE" in messages[1]
    assert "agnostic/ops" not in messages[1] and "agnostic/autograd" not in messages[1]


def test_without_anomaly_mode_nan_gradients_pass_silently(device):
    x = agnostic.tensor([0.0, 1.0], requires_grad=True, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _nan_product(x, device).backward()
        with agnostic.autograd.set_detect_anomaly(True, check_nan=False):
            x.grad = None
            _nan_product(x, device).backward()
    assert x.grad.isnan().tolist() == [True, False]


def test_message_matches_pytorch():
    torch = pytest.importorskip("torch")
    errors = []
    for library in (agnostic, torch):
        x = library.tensor([4.0, 0.0], requires_grad=True)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with library.autograd.detect_anomaly():
                y = (x.sqrt() * 0).sum()  # SqrtBackward0: 0 / (2 * sqrt(0)) is nan
                with pytest.raises(RuntimeError) as info:
                    y.backward()
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_errors_in_custom_backward_report_the_forward_call(device):
    class Broken(agnostic.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("broken backward")

    x = agnostic.ones(2, requires_grad=True, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with agnostic.autograd.set_detect_anomaly(True):
            y = Broken.apply(x).sum()  # BROKEN CALL
            with pytest.raises(ValueError, match="broken backward"):
                y.backward()
    (message,) = _messages(caught)
    assert message.startswith("Error detected in BrokenBackward. Traceback of forward call that caused the error:")
    assert "# BROKEN CALL" in message


def test_node_made_outside_the_mode_says_so(device):
    x = agnostic.tensor([0.0, 1.0], requires_grad=True, device=device)
    y = _nan_product(x, device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with agnostic.autograd.set_detect_anomaly(True), pytest.raises(RuntimeError, match="returned nan"):
            y.backward()
    assert _messages(caught) == ["Error detected in MulBackward0. No forward pass information available. Enable "
                                 "detect anomaly during forward pass for more information."]


def test_double_backward_reports_the_node_that_induced_the_failing_one(device):
    x = agnostic.tensor([0.0, 1.0], requires_grad=True, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with agnostic.autograd.set_detect_anomaly(True):
            y = x.sqrt().sum()  # SQRT CALL
            (first,) = agnostic.autograd.grad(y, x, create_graph=True)  # inf at 0, made by SqrtBackward0
            with pytest.raises(RuntimeError, match="returned nan values"):
                (first * agnostic.tensor([0.0, 1.0], device=device)).sum().backward()
    messages = _messages(caught)
    assert len(messages) == 2 and "Previous calculation was induced by SqrtBackward0" in messages[1]
    assert "# SQRT CALL" in messages[1]


def test_anomaly_flags_and_context_managers():
    assert not anomaly_mode.is_anomaly_enabled() and anomaly_mode.is_anomaly_check_nan_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = agnostic.autograd.detect_anomaly(check_nan=False)
    assert not anomaly_mode.is_anomaly_enabled()  # the constructor changes nothing
    with manager:
        assert anomaly_mode.is_anomaly_enabled() and not anomaly_mode.is_anomaly_check_nan_enabled()
    assert not anomaly_mode.is_anomaly_enabled() and anomaly_mode.is_anomaly_check_nan_enabled()
    agnostic.autograd.set_detect_anomaly(True)  # as a function: on from the call
    assert anomaly_mode.is_anomaly_enabled()
    agnostic.autograd.set_detect_anomaly(False)
    assert not anomaly_mode.is_anomaly_enabled()


def test_detect_anomaly_as_a_decorator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @agnostic.autograd.detect_anomaly()
        def state():
            return anomaly_mode.is_anomaly_enabled()
    assert state() and not anomaly_mode.is_anomaly_enabled()


def test_nothing_is_kept_while_the_mode_is_off():
    x = agnostic.ones(2, requires_grad=True)
    before = len(anomaly_mode._records)
    (x * 2).sum()
    assert len(anomaly_mode._records) == before
