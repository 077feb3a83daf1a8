"""The optimiser and the warm-up learning-rate schedule (paper, section 5.3)."""
from __future__ import annotations

import torch


def noam_lr(step: int, d_model: int = 512, warmup: int = 4000, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), for step >= 1 (5.3)."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def make_optimizer(model, d_model: int, warmup: int, scale: float = 1.0, fused: bool | None = None):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) with the warm-up schedule as a LambdaLR.

    The LambdaLR base lr is 1, so the scheduler's factor is the learning rate itself.
    """
    kwargs = {"fused": True} if fused else {}
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, **kwargs)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: noam_lr(i + 1, d_model, warmup, scale))
    return opt, sched
