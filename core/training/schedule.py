"""The optimiser and the warm-up learning-rate schedule (paper, section 5.3)."""
from __future__ import annotations

import torch


def noam_lr(step: int, d_model: int = 512, warmup: int = 4000, scale: float = 1.0) -> float:
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), for step >= 1 (5.3)."""
    step = max(step, 1)
    return scale * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def cooldown_factor(step: int, end: int = 0, length: int = 0) -> float:
    """Factor on the learning rate that takes it to 0 over the last `length` steps before step `end`.

    Shape 1 - sqrt(progress), as in Hägele et al. 2024 ("Scaling Laws and Compute-Optimal Training Beyond
    Fixed Training Durations"): a short final decay gives much of a longer run's gain. Not in the paper.
    """
    if length <= 0 or step <= end - length:
        return 1.0
    return max(0.0, 1.0 - ((step - (end - length)) / length) ** 0.5)


def describe_cooldown(cooldown: dict) -> str:
    """A card's training["cooldown"] (when it has one) in words, for the card, the Checkpoint and Learning-rate
    pages: by steps (--cooldown) or by the clock (--cooldown-minutes), and where the run stopped if it stopped first."""
    if "minutes" in cooldown:
        length, end, stopped = cooldown["minutes"], cooldown["to_zero_at_minute"], cooldown.get("stopped_at_minute")
        span, how = f"the last {length:g} of {end:g} minutes of training", ", by the clock"
        where = "after {:g} minutes"
    else:
        length, end, stopped = cooldown["steps"], cooldown["to_zero_at_step"], cooldown.get("stopped_at_step")
        span, how, where = f"the last {length:,} steps, ending at step {end:,}", "", "at step {:,}"
    cut = stopped is not None and stopped < end          # the run stopped first (a time limit, a signal)
    words = (f"the learning rate was {'being ' if cut else ''}taken down to 0 over {span} "
             f"({cooldown['shape']} shape{how}; a cool-down, not in the paper)")
    if cut:
        left = cooldown_factor(stopped, end, length)
        words += f", but the run stopped {where.format(stopped)}, with {left:.0%} of the schedule's learning rate left"
    return words


def make_optimizer(model, d_model: int, warmup: int, scale: float = 1.0, fused: bool | None = None,
                   start_step: int = 0, rewarm: int = 0, cooldown: tuple[int, int] = (0, 0)):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) with the warm-up schedule as a LambdaLR.

    The LambdaLR base lr is 1, so the scheduler's factor is the learning rate itself.
    A warm start from a model trained for `start_step` steps continues the schedule from there,
    ramped up linearly over `rewarm` steps: a fresh Adam has no moment estimates yet, and the full
    learning rate on its first steps would shake the trained weights.
    cooldown: (end step, length): the schedule times cooldown_factor, 0 at the end step.
    """
    kwargs = {"fused": True} if fused else {}
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, **kwargs)

    def factor(i: int) -> float:   # i: updates made by this optimiser so far
        ramp = min(1.0, (i + 1) / rewarm) if rewarm else 1.0
        step = start_step + i + 1
        return ramp * noam_lr(step, d_model, warmup, scale) * cooldown_factor(step, *cooldown)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    return opt, sched
