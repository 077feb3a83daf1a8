"""Dropout (paper, section 5.4), with a mask that is cheap to draw on a CPU.

torch's CPU dropout draws one Bernoulli sample per element (`bernoulli_`), and on our 2-core
machine those draws were the largest single cost of a training step (scripts/bench/bench_core.py, part a).
Here one call of `random_()` fills 64-bit words with 63 random bits each; the three low 16-bit lanes
of every word are full 16-bit random numbers, so one word gives three mask entries. The keep
probability is rounded to a multiple of 1/65536 (0.1 -> 0.100006). On a GPU torch's own kernel is
already fast and is used as it is.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

_LANES = 3   # 16-bit lanes of a 63-bit random word that are fully random (the top lane has 15 bits)


def keep_mask(shape, p: float, device="cpu") -> torch.Tensor:
    """A bool tensor of `shape`, True (keep) with probability 1 - p, drawn from torch's generator."""
    n = math.prod(shape)
    words = torch.empty((n + _LANES - 1) // _LANES, dtype=torch.int64, device=device).random_()
    lanes = words.view(torch.int16).view(-1, 4)[:, :_LANES]             # (words, 3) uniform in [-2^15, 2^15)
    drop_below = round(p * 65536) - 32768
    return (lanes.reshape(-1)[:n] >= drop_below).view(shape)


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout: zero each element with probability p, scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training=True)
    keep = keep_mask(x.shape, p, x.device)
    return torch.where(keep, x * (1.0 / (1.0 - p)), 0.0)


class Dropout(nn.Module):
    """nn.Dropout with the cheap CPU mask above (same interface: `p`, train/eval)."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
