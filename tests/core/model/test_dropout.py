"""The cheap CPU dropout (core/model/dropout.py): masks, scaling, gradients, the RNG, and attention dropout."""
import pytest
import torch

import core
from core.model.dropout import Dropout, dropout, keep_mask, scaled_keep


def test_keep_mask_keeps_1_minus_p_in_every_lane():
    torch.manual_seed(0)
    for p in (0.1, 0.3, 0.5):
        m = keep_mask((400_001,), p)                        # not a multiple of 4: the last word is cut
        assert m.dtype == torch.bool and m.shape == (400_001,)
        # 5 standard deviations of a binomial with n = 100,000 (each of the four 16-bit lanes separately: the
        # top one has its own threshold)
        for lane in range(4):
            share = m[lane::4].float().mean().item()
            assert share == pytest.approx(1 - p, abs=5 * (p * (1 - p) / 100_000) ** 0.5), (p, lane)


def _four_lane_mask(n, p):
    """The mask as this file first drew it: (n + 3) // 4 words, compared as (words, 4) int16 lanes."""
    lanes = torch.empty((n + 3) // 4, dtype=torch.int64).random_().view(torch.int16).view(-1, 4)
    return (lanes >= torch.tensor([round(p * 65536) - 32768] * 3 + [round(p * 32768)], dtype=torch.int16)).view(-1)[:n]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4097])
def test_masks_are_the_same_draws_as_the_four_lane_mask(n):
    """Rows of 64 lanes are only a faster layout: the same seed gives the same mask (so a run resumed across
    the change repeats its dropout), and scaled_keep's factors are that mask, scaled."""
    torch.manual_seed(n)
    refs = [_four_lane_mask(n, 0.1), _four_lane_mask(n, 0.3)]        # two in a row: the generator moves on alike
    torch.manual_seed(n)
    assert torch.equal(keep_mask((n,), 0.1), refs[0]) and torch.equal(keep_mask((n,), 0.3), refs[1])
    for dtype in (torch.bfloat16, torch.float32):
        torch.manual_seed(n)
        factors, ref = scaled_keep((n,), 0.1, dtype), refs[0]
        assert factors.dtype == dtype and torch.equal(scaled_keep((n,), 0.3, dtype) != 0, refs[1])
        torch.testing.assert_close(factors, ref.to(dtype) / torch.tensor(0.9, dtype=dtype))


def test_dropout_zeroes_scales_and_passes_the_gradient_through_the_kept_elements():
    torch.manual_seed(1)
    x = torch.randn(64, 200, requires_grad=True)
    y = dropout(x, 0.25, training=True)
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / 0.75)     # inverted dropout: the kept ones are scaled up
    assert 0.70 < kept.float().mean().item() < 0.80
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.75)
    assert dropout(x, 0.25, training=False) is x and dropout(x, 0.0) is x
    assert dropout(x.detach().bfloat16(), 0.25).dtype == torch.bfloat16


def test_dropout_follows_torchs_generator_so_resumed_runs_repeat():
    d = Dropout(0.1).train()
    torch.manual_seed(5)
    a = d(torch.ones(1000))
    torch.manual_seed(5)
    assert torch.equal(a, d(torch.ones(1000)))
    assert not torch.equal(a, d(torch.ones(1000)))
    assert torch.equal(d.eval()(torch.ones(10)), torch.ones(10))


@pytest.mark.slow
def test_attention_dropout_keeps_the_expected_value_of_the_output():
    """Training-mode attention with dropout averages to the dropout-free output (E[mask / (1-p)] = 1)."""
    torch.manual_seed(2)
    mha = core.MultiHeadAttention(16, 4, dropout=0.3)
    x = torch.randn(1, 5, 16)
    clean, _ = mha.eval()(x, x, x)
    mha.train()
    mean = torch.stack([mha(x, x, x)[0] for _ in range(3000)]).mean(0)
    torch.testing.assert_close(mean, clean, atol=0.03, rtol=0)


def test_the_papers_dropout_leaves_attention_and_the_ffn_undropped():
    """attn_dropout / ffn_dropout: None (older config.json files) means `dropout`, 0 is the paper's (5.4)."""
    old = core.TransformerConfig.from_dict({"vocab_size": 40, "N": 1, "d_model": 16, "d_ff": 32, "h": 4,
                                            "dropout": 0.2})
    assert old.attn_dropout == old.ffn_dropout == 0.2
    cfg = core.TransformerConfig(vocab_size=40, N=1, d_model=16, d_ff=32, h=4, dropout=0.2,
                                 attn_dropout=0.0, ffn_dropout=0.0)
    layer = core.Transformer(cfg).train().encoder[0]
    assert layer.self_attn.dropout == 0.0 and layer.ffn.dropout.p == 0.0 and layer.res_ffn.dropout.p == 0.2
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    assert torch.equal(layer.ffn(x), layer.ffn.eval()(x))          # no dropout inside the FFN in training
    layer.self_attn.train()
    y, _ = layer.self_attn(x, x, x)
    torch.testing.assert_close(y, layer.self_attn.eval()(x, x, x)[0], atol=1e-6, rtol=0)
