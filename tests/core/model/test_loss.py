"""The chunked label-smoothed loss (core/model/loss.py) against torch's own cross entropy."""
import pytest
import torch
import torch.nn.functional as F

from core.model import loss as loss_module
import core
from core.model.loss import label_smoothed_loss, projected_loss


def reference(logits, target, epsilon, pad_id):
    """torch's F.cross_entropy with label smoothing, in float64, averaged over non-padding targets."""
    s = F.cross_entropy(logits.double().reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index=pad_id,
                        label_smoothing=epsilon, reduction="sum")
    return s / (target != pad_id).sum()


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_loss_and_gradient_match_torchs_cross_entropy_across_chunks_and_padding(epsilon):
    torch.manual_seed(0)
    rows = loss_module.ROWS * 2 + 37                       # three chunks, the last one short
    logits = (torch.randn(rows, 53) * 3).requires_grad_()
    target = torch.randint(0, 53, (rows,))
    target[::5] = 1                                        # padding rows: no loss, no gradient
    loss, n = label_smoothed_loss(logits, target, epsilon, pad_id=1)
    want = reference(logits, target, epsilon, 1)
    assert n == (target != 1).sum()
    torch.testing.assert_close(loss.double(), want, rtol=1e-6, atol=1e-6)
    loss.backward()
    ref = logits.detach().double().requires_grad_()
    reference(ref, target, epsilon, 1).backward()
    torch.testing.assert_close(logits.grad.double(), ref.grad, rtol=1e-5, atol=1e-7)
    assert logits.grad[::5].abs().max() == 0


def test_bf16_logits_get_bf16_gradients_and_a_loss_close_to_fp32s():
    torch.manual_seed(1)
    logits = torch.randn(2, 300, 80).bfloat16().requires_grad_()   # (B, T, V), as the model gives them
    target = torch.randint(0, 80, (2, 300))
    loss, _ = label_smoothed_loss(logits, target, 0.1, pad_id=0)
    loss.backward()
    assert loss.dtype == torch.float32 and logits.grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss.double(), reference(logits.detach(), target, 0.1, 0), rtol=1e-5, atol=1e-5)


def test_a_batch_of_only_padding_gives_zero_not_nan():
    logits = torch.randn(4, 10, requires_grad=True)
    loss, n = label_smoothed_loss(logits, torch.zeros(4, dtype=torch.long), 0.1, pad_id=0)
    loss.backward()
    assert n == 0 and loss.item() == 0.0 and logits.grad.abs().max() == 0


@pytest.mark.parametrize("with_bias", [False, True])
def test_the_fused_projection_and_loss_match_the_projection_then_torchs_cross_entropy(with_bias):
    torch.manual_seed(2)
    rows, d, V = loss_module.ROWS + 45, 16, 37                 # two chunks, the last one short
    hidden = torch.randn(rows, d, requires_grad=True)
    weight = torch.randn(V, d, requires_grad=True)
    bias = torch.randn(V, requires_grad=True) if with_bias else None
    target = torch.randint(0, V, (rows,))
    target[::7] = 2                                            # padding rows
    loss, n = projected_loss(hidden, weight, bias, target, 0.1, pad_id=2)
    (loss * 3).backward()                                      # a gradient from above that is not 1
    refs = [t.detach().double().requires_grad_() for t in (hidden, weight) + ((bias,) if with_bias else ())]
    logits = refs[0] @ refs[1].t() + (refs[2] if with_bias else 0)
    want = reference(logits, target, 0.1, 2)
    (want * 3).backward()
    assert n == (target != 2).sum()
    torch.testing.assert_close(loss.double(), want, rtol=1e-6, atol=1e-6)
    for got, ref in zip((hidden, weight, bias), refs):
        torch.testing.assert_close(got.grad.double(), ref.grad, rtol=1e-5, atol=1e-6)
    assert hidden.grad[::7].abs().max() == 0


def test_the_fused_loss_under_bf16_autocast_is_close_to_fp32s_and_keeps_fp32_gradients():
    torch.manual_seed(3)
    hidden = torch.randn(2, 300, 32, requires_grad=True)            # (B, T, d_model), fp32 as LayerNorm gives it
    weight = (torch.randn(90, 32) * 0.2).requires_grad_()
    target = torch.randint(1, 90, (2, 300))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = projected_loss(hidden, weight, None, target, 0.1, pad_id=0)
    loss.backward()
    exact, _ = projected_loss(hidden.detach(), weight.detach(), None, target, 0.1, pad_id=0)
    assert loss.dtype == torch.float32 and hidden.grad.dtype == weight.grad.dtype == torch.float32
    torch.testing.assert_close(loss, exact, rtol=1e-2, atol=1e-2)


def test_the_fused_loss_without_gradients_makes_none():
    hidden, weight = torch.randn(5, 8, requires_grad=True), torch.randn(11, 8, requires_grad=True)
    with torch.no_grad():
        loss, n = projected_loss(hidden, weight, None, torch.randint(0, 11, (5,)), 0.1, pad_id=0)
    assert not loss.requires_grad and torch.isfinite(loss)


def test_the_models_fused_training_loss_equals_its_logits_then_the_loss():
    torch.manual_seed(4)
    cfg = core.preset("tiny", vocab_size=50)
    model = core.Transformer(cfg).eval()                           # eval: no dropout, so both passes are equal
    src, tgt = torch.randint(3, 50, (3, 7)), torch.randint(3, 50, (3, 6))
    tgt[0, -2:] = cfg.pad_id
    fused, n = model(src, tgt[:, :-1], tgt_out=tgt[:, 1:])
    plain, m = label_smoothed_loss(model(src, tgt[:, :-1]), tgt[:, 1:], cfg.label_smoothing, cfg.pad_id)
    assert n == m
    torch.testing.assert_close(fused, plain, rtol=1e-6, atol=1e-6)
