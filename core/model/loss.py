"""Label-smoothed cross entropy (paper, section 5.4), computed in row chunks on a CPU.

The vocabulary softmax is the largest tensor of a training step: (target tokens x vocabulary), 28M numbers
for a 3,500-token batch of news-small. F.cross_entropy on bf16 logits first copies them to fp32, writes the
fp32 log-probabilities, and on the way back writes fp32 gradients that are copied to bf16 again: five
passes over memory. Here a chunk of rows at a time is widened to fp32 in cache-sized pieces; the forward
pass keeps only the loss, and the backward pass recomputes the softmax of a chunk and writes its gradient
once, in the logits' own dtype.

`projected_loss` goes one step further and also takes in the pre-softmax projection (3.4): each chunk's
logits are made, used and dropped while they are still in the cache, so the full (tokens x vocabulary)
matrix never exists. On 2 threads a (3500 x 256) x (256 x 8000) bf16 product runs at ~470 GFLOP/s whole and
~900 in chunks of 512 rows (measured here, torch 2.13): the full product's output does not fit the cache.
On a GPU torch's fused kernel is used as it is.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

ROWS = 512    # rows of logits at a time: 512 x 8000 x 4 bytes = 16 MB of fp32


def _rows(z, target, epsilon: float, pad_id: int, want_grad: bool):
    """Loss of each row of fp32 logits z (rows, V), and d loss / d z when want_grad (else None).

    loss = -(1 - eps) log p_y - eps / V sum_v log p_v (the target distribution is (1 - eps) on the true
    class plus eps / V on every class, PyTorch's convention); d loss / d z = p - that distribution.
    Rows whose target is pad_id add nothing and get no gradient. The softmax is the one pass over the
    row that costs: log-sum-exp comes from the largest logit, whose probability (>= 1/V) cannot
    underflow, and sum_v log p_v = sum_v z_v - V lse (a log_softmax then exp took twice as long).
    """
    V = z.size(-1)
    p = torch.softmax(z, dim=-1)                                            # (rows, V)
    lse = z.amax(dim=-1) - p.amax(dim=-1).log()     # the top logit's p is the top p (amax: 10x a max's speed)
    real, y = target != pad_id, target.clamp(min=0)[:, None]
    row = -(1 - epsilon) * (z.gather(1, y)[:, 0] - lse) - epsilon / V * (z.sum(-1) - V * lse)
    row = row.masked_fill(~real, 0.0)
    if not want_grad:
        return row, None
    grad = p.sub_(epsilon / V)
    grad.scatter_add_(1, y, torch.full_like(row[:, None], epsilon - 1.0))
    pads = (~real).nonzero()[:, 0]
    return row, (grad.index_fill_(0, pads, 0.0) if len(pads) else grad)     # (a masked_fill is ~10x slower)


class SmoothedCrossEntropy(torch.autograd.Function):
    """Summed loss of logits (N, V) against targets (N,); the backward pass recomputes each chunk's softmax.

    (Making the gradient in the forward pass would need one more pass over all of it, to scale it.)
    """

    @staticmethod
    def forward(ctx, logits, target, epsilon: float, pad_id: int):
        total = torch.zeros((), dtype=torch.float64, device=logits.device)
        for a in range(0, logits.size(0), ROWS):
            row, _ = _rows(logits[a: a + ROWS].float(), target[a: a + ROWS], epsilon, pad_id, want_grad=False)
            total += row.sum(dtype=torch.float64)
        ctx.save_for_backward(logits, target)
        ctx.epsilon, ctx.pad_id = epsilon, pad_id
        return total.float()

    @staticmethod
    def backward(ctx, grad_total):
        logits, target = ctx.saved_tensors
        grad = torch.empty_like(logits)
        for a in range(0, logits.size(0), ROWS):
            _, g = _rows(logits[a: a + ROWS].float(), target[a: a + ROWS], ctx.epsilon, ctx.pad_id, want_grad=True)
            grad[a: a + ROWS] = g.mul_(grad_total)
        return grad, None, None, None


class ProjectedSmoothedCrossEntropy(torch.autograd.Function):
    """Summed loss of hidden (N, d_model) @ weight^T (+ bias) against targets (N,), chunk by chunk.

    The matmuls run in `dtype` (bf16 under autocast); the weight and bias gradients are summed in fp32
    over the chunks. All gradients are made in the forward pass and scaled in the backward one.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, target, epsilon: float, pad_id: int, dtype, grad_enabled: bool):
        want = tuple(grad_enabled and w for w in ctx.needs_input_grad[:3])
        want_grad = any(want)
        x, w = hidden.to(dtype), weight.to(dtype)
        b = None if bias is None else bias.float()
        grad_x = torch.empty_like(x) if want[0] else None
        grad_w = torch.zeros_like(weight, dtype=torch.float32) if want[1] else None
        grad_b = torch.zeros_like(bias, dtype=torch.float32) if want[2] else None
        total = torch.zeros((), dtype=torch.float64, device=hidden.device)
        for a in range(0, x.size(0), ROWS):
            x_c = x[a: a + ROWS]                                                   # (rows, d_model)
            z = (x_c @ w.t()).float()                                               # (rows, V)
            row, g = _rows(z if b is None else z.add_(b), target[a: a + ROWS], epsilon, pad_id, want_grad)
            total += row.sum(dtype=torch.float64)
            if want_grad:
                if want[2]:
                    grad_b += g.sum(0)
                g = g.to(dtype)
                if want[0]:
                    grad_x[a: a + ROWS] = g @ w
                if want[1]:
                    grad_w += g.t() @ x_c
        ctx.save_for_backward(*(t for t in (grad_x, grad_w, grad_b) if t is not None))
        ctx.want, ctx.dtypes = want, (hidden.dtype, weight.dtype, None if bias is None else bias.dtype)
        return total.float()

    @staticmethod
    def backward(ctx, grad_total):
        saved = iter(ctx.saved_tensors)
        grads = [(next(saved) * grad_total).to(dt) if w else None for w, dt in zip(ctx.want, ctx.dtypes)]
        return (*grads, None, None, None, None, None)


def label_smoothed_loss(logits, target, epsilon: float, pad_id: int):
    """Cross entropy with label smoothing (5.4), averaged over non-padding target tokens.

    The target distribution is (1 - epsilon) on the true class plus epsilon / V on every class
    (PyTorch's convention, so the true class gets 1 - epsilon + epsilon / V).
    Returns (loss, number of target tokens).
    """
    logits = logits.reshape(-1, logits.size(-1))
    target = target.reshape(-1)
    n_tokens = (target != pad_id).sum()
    if logits.device.type == "cpu":
        loss = SmoothedCrossEntropy.apply(logits, target, epsilon, pad_id)
    else:
        loss = summed_cross_entropy(logits, target, epsilon, pad_id)
    return loss / n_tokens.clamp(min=1), n_tokens


def summed_cross_entropy(logits, target, epsilon: float, pad_id: int):
    """The label-smoothed loss summed over the non-padding rows of logits (N, V), by torch's own fused kernel in
    fp32 (a GPU's way: no row chunks; under torch.compile it fuses with the projection's epilogue)."""
    return F.cross_entropy(logits.float(), target, ignore_index=pad_id, label_smoothing=epsilon, reduction="sum")


def projected_loss(hidden, weight, bias, target, epsilon: float, pad_id: int):
    """label_smoothed_loss of the logits hidden @ weight^T (+ bias), without holding the logits on a CPU.

    hidden: (..., d_model), weight: (V, d_model), bias: (V,) or None, target: (...). Under autocast the
    matmuls run in its dtype (bf16), as the model's own projection would. Returns (loss, target tokens).
    """
    if hidden.device.type != "cpu":
        logits = F.linear(hidden, weight)
        return label_smoothed_loss(logits if bias is None else logits + bias, target, epsilon, pad_id)
    dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else hidden.dtype
    hidden, target = hidden.reshape(-1, hidden.size(-1)), target.reshape(-1)
    n_tokens = (target != pad_id).sum()
    with torch.autocast("cpu", enabled=False):
        loss = ProjectedSmoothedCrossEntropy.apply(hidden, weight, bias, target, epsilon, pad_id, dtype,
                                                   torch.is_grad_enabled())
    return loss / n_tokens.clamp(min=1), n_tokens
