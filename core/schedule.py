"""The optimiser and the warm-up learning-rate schedule (paper, section 5.3)."""
from __future__ import annotations

import torch


def noam_lr(step: int, d_model: int = 512, warmup: int = 4000, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), for step >= 1 (5.3)."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def make_optimizer(model, d_model: int, warmup: int, scale: float = 1.0, fused: bool | None = None,
                   start_step: int = 0, rewarm: int = 0):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) with the warm-up schedule as a LambdaLR.

    The LambdaLR base lr is 1, so the scheduler's factor is the learning rate itself.
    A warm start from a model trained for `start_step` steps continues the schedule from there,
    ramped up linearly over `rewarm` steps: a fresh Adam has no moment estimates yet, and the full
    learning rate on its first steps would shake the trained weights.
    """
    kwargs = {"fused": True} if fused else {}
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, **kwargs)

    def factor(i: int) -> float:   # i: updates made by this optimiser so far
        ramp = min(1.0, (i + 1) / rewarm) if rewarm else 1.0
        return ramp * noam_lr(start_step + i + 1, d_model, warmup, scale)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    return opt, sched
