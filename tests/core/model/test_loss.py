"""The chunked label-smoothed loss (core/model/loss.py) against torch's own cross entropy."""
import pytest
import torch
import torch.nn.functional as F

from core.model import loss as loss_module
from core.model.loss import label_smoothed_loss


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
