"""Attention and Transformer layers: scaled_dot_product_attention against NumPy and PyTorch, MultiheadAttention and
the Transformer layers against PyTorch (a torch state_dict loaded; values and gradients in float64), gradcheck,
torch's errors, and a toy task learned."""

import math

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(23)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


def from_torch(module, reference, device):
    result = module.load_state_dict({key: agnostic.tensor(value.detach().numpy())
                                     for key, value in reference.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    return module.to(device)


def numpy_attention(q, k, v, mask=None, scale=None):
    scores = q @ numpy.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = numpy.where(mask, scores, -numpy.inf) if mask.dtype == bool else scores + mask
    with numpy.errstate(invalid="ignore"):
        weights = numpy.exp(scores - scores.max(-1, keepdims=True))
        weights = weights / weights.sum(-1, keepdims=True)
    return numpy.nan_to_num(weights, nan=0.0) @ v


# ----- scaled_dot_product_attention ----------------------------------------------------------------------------


def test_sdpa_matches_numpy_with_bool_float_and_causal_masks(device):
    q, k = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((2, 3, 6, 5))
    v = RNG.standard_normal((2, 3, 6, 7))
    bool_mask = RNG.random((4, 6)) > 0.4
    bool_mask[:, 0] = True
    float_mask = RNG.standard_normal((2, 1, 4, 6))
    causal = numpy.tril(numpy.ones((4, 6), dtype=bool))
    cases = [({}, None, None), ({"attn_mask": bool_mask}, bool_mask, None),
             ({"attn_mask": float_mask}, float_mask, None), ({"is_causal": True}, causal, None),
             ({"scale": 0.25}, None, 0.25)]
    for kwargs, mask, scale in cases:
        arguments = {key: make(value, device) if isinstance(value, numpy.ndarray) else value
                     for key, value in kwargs.items()}
        output = F.scaled_dot_product_attention(make(q, device), make(k, device), make(v, device), **arguments)
        numpy.testing.assert_allclose(host(output), numpy_attention(q, k, v, mask, scale), atol=1e-12)


def test_sdpa_fully_masked_rows_give_zeros_and_finite_gradients(device):
    q = make(RNG.standard_normal((3, 4)), device, requires_grad=True)
    k = make(RNG.standard_normal((5, 4)), device, requires_grad=True)
    v = make(RNG.standard_normal((5, 2)), device, requires_grad=True)
    mask = numpy.ones((3, 5), dtype=bool)
    mask[1] = False
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=make(mask, device))
    assert host(output)[1].tolist() == [0.0, 0.0]
    output.sum().backward()
    assert all(numpy.isfinite(host(t.grad)).all() for t in (q, k, v))
    assert host(q.grad)[1].tolist() == [0.0] * 4


def test_sdpa_gradcheck(device):
    q = make(RNG.standard_normal((2, 3, 4)), device, requires_grad=True)
    k = make(RNG.standard_normal((2, 5, 4)), device, requires_grad=True)
    v = make(RNG.standard_normal((2, 5, 3)), device, requires_grad=True)
    mask = make(RNG.standard_normal((3, 5)), device)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"}, {"gqa": True}])
def test_sdpa_matches_torch_values_and_gradients(device, kwargs):
    torch = pytest.importorskip("torch")
    heads_kv = 2 if kwargs.get("gqa") else 4
    arrays = [RNG.standard_normal((2, 4, 3, 5)), RNG.standard_normal((2, heads_kv, 6, 5)),
              RNG.standard_normal((2, heads_kv, 6, 5))]
    extra_t, extra_a = {"is_causal": kwargs.get("is_causal", False), "enable_gqa": bool(kwargs.get("gqa"))}, {}
    extra_a.update(extra_t)
    if kwargs.get("mask") == "bool":
        mask = RNG.random((2, 1, 3, 6)) > 0.5
        mask[0, 0, 1] = False
        extra_t["attn_mask"], extra_a["attn_mask"] = torch.tensor(mask), make(mask, device)
    elif kwargs.get("mask") == "float":
        mask = RNG.standard_normal((3, 6))
        extra_t["attn_mask"], extra_a["attn_mask"] = torch.tensor(mask), make(mask, device)
    inputs_t = [torch.tensor(a, requires_grad=True) for a in arrays]
    inputs_a = [make(a, device, requires_grad=True) for a in arrays]
    output_t = torch.nn.functional.scaled_dot_product_attention(*inputs_t, **extra_t)
    output_a = F.scaled_dot_product_attention(*inputs_a, **extra_a)
    numpy.testing.assert_allclose(host(output_a), output_t.detach().numpy(), atol=1e-12)
    (output_t ** 2).sum().backward()
    (output_a ** 2).sum().backward()
    for t, a in zip(inputs_t, inputs_a):
        numpy.testing.assert_allclose(host(a.grad), t.grad.numpy(), atol=1e-11)


def test_sdpa_errors(device):
    q = agnostic.zeros(1, 2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=agnostic.ones(3, 3, dtype=agnostic.bool, device=device),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="attn_mask dtype to be bool or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=agnostic.ones(3, 3, dtype=agnostic.int64, device=device))
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        F.scaled_dot_product_attention(agnostic.zeros(1, 4, 3, 4, device=device), agnostic.zeros(1, 3, 3, 4,
                                       device=device), agnostic.zeros(1, 3, 3, 4, device=device), enable_gqa=True)


# ----- MultiheadAttention ------------------------------------------------------------------------------------------

MHA_CONFIGS = [
    ({}, {}),
    ({"batch_first": True}, {"masks": True}),
    ({"bias": False, "add_bias_kv": True, "add_zero_attn": True}, {"masks": True}),
    ({"kdim": 3, "vdim": 7}, {"average_attn_weights": False}),
    ({"add_bias_kv": True}, {"need_weights": False, "masks": True}),
]


@pytest.mark.parametrize("config,call", MHA_CONFIGS)
def test_multihead_attention_matches_torch(device, config, call):
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    reference = torch.nn.MultiheadAttention(8, 2, **config).double()
    attention = from_torch(nn.MultiheadAttention(8, 2, **config).double(), reference, device)
    call = dict(call)
    kdim, vdim, batch_first = config.get("kdim", 8), config.get("vdim", 8), config.get("batch_first", False)

    def shape(length, width):
        return (3, length, width) if batch_first else (length, 3, width)
    arrays = [RNG.standard_normal(shape(5, 8)), RNG.standard_normal(shape(6, kdim)),
              RNG.standard_normal(shape(6, vdim))]
    extra_t, extra_a = {}, {}
    if call.pop("masks", False):
        padding = numpy.zeros((3, 6), dtype=bool)
        padding[0, 4:] = True
        attn_mask = RNG.standard_normal((5, 6)) > 0.8
        extra_t = {"key_padding_mask": torch.tensor(padding), "attn_mask": torch.tensor(attn_mask)}
        extra_a = {"key_padding_mask": make(padding, device), "attn_mask": make(attn_mask, device)}
    inputs_t = [torch.tensor(a, requires_grad=True) for a in arrays]
    inputs_a = [make(a, device, requires_grad=True) for a in arrays]
    output_t, weights_t = reference(*inputs_t, **call, **extra_t)
    output_a, weights_a = attention(*inputs_a, **call, **extra_a)
    numpy.testing.assert_allclose(host(output_a), output_t.detach().numpy(), atol=1e-12)
    if weights_t is None:
        assert weights_a is None
    else:
        numpy.testing.assert_allclose(host(weights_a), weights_t.detach().numpy(), atol=1e-12)
    output_t.pow(2).sum().backward()
    output_a.pow(2).sum().backward()
    for t, a in zip(inputs_t, inputs_a):
        numpy.testing.assert_allclose(host(a.grad), t.grad.numpy(), atol=1e-11)
    for (name, p_t), p_a in zip(reference.named_parameters(), attention.parameters()):
        numpy.testing.assert_allclose(host(p_a.grad), p_t.grad.numpy(), atol=1e-10, err_msg=name)


def test_multihead_self_attention_unbatched_and_parameters(device):
    agnostic.manual_seed(0)
    attention = nn.MultiheadAttention(6, 3).to(device)
    assert [name for name, _ in attention.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                                  "out_proj.weight", "out_proj.bias"]
    assert float(attention.in_proj_bias.abs().sum()) == 0.0 and float(attention.out_proj.bias.abs().sum()) == 0.0
    bound = math.sqrt(6 / (6 + 18))
    assert float(attention.in_proj_weight.abs().max()) <= bound
    x = agnostic.randn(4, 6, device=device)
    output, weights = attention(x, x, x)
    batched, batched_weights = attention(x.unsqueeze(1), x.unsqueeze(1), x.unsqueeze(1))
    assert output.shape == (4, 6) and weights.shape == (4, 4)
    numpy.testing.assert_allclose(host(output), host(batched[:, 0]), atol=1e-6)
    numpy.testing.assert_allclose(host(weights.sum(-1)), numpy.ones(4), atol=1e-6)
    separate = nn.MultiheadAttention(6, 3, kdim=2, vdim=5)
    assert separate.in_proj_weight is None and separate.k_proj_weight.shape == (6, 2)


def test_multihead_attention_errors(device):
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    attention = nn.MultiheadAttention(4, 2).to(device)
    x = agnostic.zeros(3, 2, 4, device=device)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        attention(x, x, x, attn_mask=agnostic.zeros(2, 2, device=device))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        attention(x, x, x, is_causal=True)


# ----- Transformer layers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [{}, {"norm_first": True, "activation": "gelu", "batch_first": True},
                                    {"bias": False, "layer_norm_eps": 1e-3}])
def test_transformer_matches_torch_values_and_gradients(device, config):
    torch = pytest.importorskip("torch")
    torch.manual_seed(6)
    sizes = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12, dropout=0.0)
    reference = torch.nn.Transformer(**sizes, **config).double()
    model = from_torch(nn.Transformer(**sizes, **config).double(), reference, device)
    assert list(model.state_dict()) == list(reference.state_dict())
    batch_first = config.get("batch_first", False)
    src = RNG.standard_normal((3, 6, 8) if batch_first else (6, 3, 8))
    tgt = RNG.standard_normal((3, 4, 8) if batch_first else (4, 3, 8))
    padding = numpy.zeros((3, 6), dtype=bool)
    padding[1, 3:] = True
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    inputs_t = [torch.tensor(a, requires_grad=True) for a in (src, tgt)]
    inputs_a = [make(a, device, requires_grad=True) for a in (src, tgt)]
    output_t = reference(*inputs_t, tgt_mask=tgt_mask, src_key_padding_mask=torch.tensor(padding),
                         memory_key_padding_mask=torch.tensor(padding))
    output_a = model(*inputs_a, tgt_mask=make(tgt_mask.numpy(), device), src_key_padding_mask=make(padding, device),
                     memory_key_padding_mask=make(padding, device))
    numpy.testing.assert_allclose(host(output_a), output_t.detach().numpy(), atol=1e-12)
    (output_t ** 2).sum().backward()
    (output_a ** 2).sum().backward()
    for t, a in zip(inputs_t, inputs_a):
        numpy.testing.assert_allclose(host(a.grad), t.grad.numpy(), atol=1e-10)
    for (name, p_t), p_a in zip(reference.named_parameters(), model.parameters()):
        numpy.testing.assert_allclose(host(p_a.grad), p_t.grad.numpy(), atol=1e-9, err_msg=name)


def test_encoder_stack_is_its_layers_applied_in_turn_then_the_norm(device):
    agnostic.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0).double()
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8).double()).to(device)
    assert encoder.layers[0] is not layer and encoder.layers[0].linear1.weight is not encoder.layers[1].linear1.weight
    x = make(RNG.standard_normal((5, 2, 8)), device)
    mask = nn.Transformer.generate_square_subsequent_mask(5, device=device, dtype=agnostic.float64)
    expected = encoder.norm(encoder.layers[1](encoder.layers[0](x, src_mask=mask), src_mask=mask))
    numpy.testing.assert_allclose(host(encoder(x, mask=mask)), host(expected), atol=1e-14)
    # the causal mask: position 0's output depends only on position 0
    changed = x.clone()
    changed[1:] += 1.0
    numpy.testing.assert_allclose(host(encoder(changed, mask=mask))[0], host(encoder(x, mask=mask))[0], atol=1e-12)


def test_decoder_layer_matches_torch_with_masks(device):
    torch = pytest.importorskip("torch")
    torch.manual_seed(8)
    reference = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0), 2).double()
    decoder = from_torch(nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 12, dropout=0.0), 2).double(),
                         reference, device)
    tgt, memory = RNG.standard_normal((4, 2, 8)), RNG.standard_normal((5, 2, 8))
    memory_mask = RNG.random((4, 5)) > 0.7
    memory_mask[:, 0] = False
    output_t = reference(torch.tensor(tgt), torch.tensor(memory), memory_mask=torch.tensor(memory_mask),
                         tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64))
    output_a = decoder(make(tgt, device), make(memory, device), memory_mask=make(memory_mask, device),
                       tgt_mask=nn.Transformer.generate_square_subsequent_mask(4, device=device,
                                                                               dtype=agnostic.float64))
    numpy.testing.assert_allclose(host(output_a), output_t.detach().numpy(), atol=1e-12)


def test_square_subsequent_mask_and_errors(device):
    mask = nn.Transformer.generate_square_subsequent_mask(3, device=device)
    assert mask.dtype == agnostic.float32
    assert host(mask).tolist() == [[0, -math.inf, -math.inf], [0, 0, -math.inf], [0, 0, 0]]
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, activation="tanh")
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, activation=F.gelu).to(device)
    assert layer(agnostic.zeros(3, 1, 4, device=device)).shape == (3, 1, 4)
    model = nn.Transformer(4, 2, 1, 1, 8).to(device)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(agnostic.zeros(3, 2, 4, device=device), agnostic.zeros(3, 1, 4, device=device))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(agnostic.zeros(3, 2, 4, device=device), agnostic.zeros(3, 2, 5, device=device))


def test_a_transformer_encoder_learns_to_find_the_largest_position(device):
    agnostic.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    embed, encoder, head = nn.Linear(1, 16), nn.TransformerEncoder(layer, 1), nn.Linear(16, 1)
    model = nn.Sequential(embed, encoder, head).to(device)
    optimizer = agnostic.optim.Adam(model.parameters(), lr=0.01)
    x = make(RNG.standard_normal((32, 5, 1)).astype(numpy.float32), device)
    target = (x == x.max(1, keepdim=True).values).float()  # 1 at each sequence's largest element
    losses = []
    for _ in range(40):
        optimizer.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(x), target)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < 0.6 * losses[0]
