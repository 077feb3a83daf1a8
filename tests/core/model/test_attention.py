"""Scaled dot-product attention, masks through the full model, and the sinusoidal positions."""
import math

import pytest
import torch

import core
from core.model.layers import PositionalEncoding
from tests.helpers import pe_formula, tiny_model


def test_scaled_softmax_value():
    # d_k = 2 and q.k = +1 / -1: softmax([1, -1] / sqrt(2)) = [0.804, 0.196] (unscaled would be 0.881 / 0.119)
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    out, probs = core.scaled_dot_product_attention(q, k, v)
    expected = torch.tensor([[0.8044, 0.1956]])
    assert torch.allclose(probs, expected, atol=1e-3), probs
    assert torch.allclose(out, expected, atol=1e-3), out   # V = identity rows, so out = probs


def test_rows_sum_to_one_and_mask():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    mask = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    mask[0, ..., 4:] = False
    out, probs = core.scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3, 5), atol=1e-6)
    assert torch.all(probs[0, ..., 4:] == 0)
    assert torch.all(probs[1] > 0)
    assert torch.allclose(out, probs @ v)


def test_bf16_scores_are_softmaxed_in_fp32_and_stay_bf16():
    """Under autocast the probabilities keep the scores' dtype, and values and gradients match an fp32 softmax
    rounded to bf16 (the fp32 path exists for speed on a CPU, it must not change the numbers)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 8, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    mask[1, ..., 3:] = False
    out, probs = core.scaled_dot_product_attention(q, k, v, mask)
    assert probs.dtype == out.dtype == torch.bfloat16
    assert torch.all(probs[1, ..., 3:] == 0)
    q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
    out32, probs32 = core.scaled_dot_product_attention(q32, k32, v32, mask)
    assert torch.allclose(probs.float(), probs32, atol=1e-2)
    assert torch.allclose(out.float(), out32, atol=3e-2)
    out.float().square().sum().backward()
    out32.square().sum().backward()
    for lo, hi in ((q, q32), (k, k32), (v, v32)):
        assert torch.allclose(lo.grad.float(), hi.grad, atol=0.1, rtol=0.05)


def _padded_batch():
    src = torch.tensor([[5, 6, 7, 8, 9, 3], [10, 11, 3, 0, 0, 0]])
    tgt = torch.tensor([[2, 12, 13, 14, 15], [2, 16, 17, 0, 0]])
    return src, tgt


def test_padded_keys_get_exactly_zero_in_every_layer():
    model = tiny_model(40, N=3)
    src, tgt = _padded_batch()
    _, att = model(src, tgt, need_weights=True)
    assert len(att.enc_self) == len(att.cross) == 3
    for maps, pad in [(att.enc_self, src == 0), (att.cross, src == 0), (att.dec_self, tgt == 0)]:
        for p in maps:
            assert torch.allclose(p.sum(-1), torch.ones_like(p.sum(-1)), atol=1e-5)
            cols = pad[:, None, None, :].expand_as(p)
            assert torch.all(p[cols] == 0)
            if maps is not att.dec_self:                 # every real key gets some attention
                assert torch.all(p[~cols] > 0)


def test_decoder_self_attention_is_causal():
    model = tiny_model(40, N=3)
    src, tgt = _padded_batch()
    _, att = model(src, tgt, need_weights=True)
    for p in att.dec_self:
        assert torch.all(torch.triu(p, diagonal=1) == 0)
        lower = torch.ones(5, 5, dtype=torch.bool).tril()
        assert torch.all(p[0][:, lower] > 0)             # everything on or below the diagonal is attended


def _cross_inputs(src):
    torch.manual_seed(3)
    x, mem = torch.randn(2, 4, 32), torch.randn(2, 6, 32)
    return x, mem, mem, (src != 0)[:, None, None, :]


def test_fused_path_matches_explicit_path():
    model = tiny_model(40, N=2)
    src, tgt = _padded_batch()
    with torch.no_grad():                     # with gradients, a CPU takes the explicit path (attention.py)
        fused = model(src, tgt)
        a, none = model.decoder[0].cross_attn(*_cross_inputs(src))
    explicit, _ = model(src, tgt, need_weights=True)
    assert torch.allclose(fused, explicit, atol=1e-5)
    b, probs = model.decoder[0].cross_attn(*_cross_inputs(src), need_weights=True)
    assert none is None and probs.shape == (2, 4, 4, 6)
    assert torch.allclose(a, b, atol=1e-6)


# --- positional encoding ---------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_sinusoidal_table_matches_formula(layout):
    table = core.sinusoidal_table(60, 16, layout).double()
    assert table.shape == (60, 16)
    assert torch.allclose(table, pe_formula(60, 16, layout), atol=1e-6)


def _rotation(k, d, layout):
    """M_k from the formula: (sin w(p+k), cos w(p+k)) = [[cos wk, sin wk], [-sin wk, cos wk]] (sin wp, cos wp)."""
    M = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        s, c = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, d // 2 + i)
        M[s, s], M[s, c] = math.cos(w * k), math.sin(w * k)
        M[c, s], M[c, c] = -math.sin(w * k), math.cos(w * k)
    return M


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("k", [1, 7])
def test_shifted_position_is_linear_function(layout, k):
    d, n = 16, 100
    table = core.sinusoidal_table(n + k, d, layout).double()
    M = _rotation(k, d, layout)
    assert torch.allclose(table[k:], table[:n] @ M.T, atol=1e-5)
    # ... and the same map, fitted by least squares on even positions, predicts the odd ones
    long = core.sinusoidal_table(1000 + k, d, layout).double()
    fit = torch.linalg.lstsq(long[:1000:2], long[k:1000 + k:2]).solution   # PE(p+k) = PE(p) @ fit
    assert torch.allclose(long[1:1000:2] @ fit, long[1 + k:1000 + k:2], atol=1e-5)
    assert torch.allclose(fit, M.T, atol=1e-3)
    assert not torch.allclose(table[k:], table[:n], atol=1e-2)          # a shift is not the identity


def test_positional_encoding_offset():
    pe = PositionalEncoding(8, 20)
    x = torch.zeros(1, 3, 8)
    assert torch.equal(pe(x, start=5)[0], core.sinusoidal_table(20, 8)[5:8])
    with pytest.raises(ValueError, match="max_len"):
        pe(torch.zeros(1, 21, 8))
