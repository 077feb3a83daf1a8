"""Dropout (paper, section 5.4), with a mask that is cheap to draw and to apply on a CPU.

torch's CPU dropout draws one Bernoulli sample per element (`bernoulli_`), and on our 2-core
machine those draws were the largest single cost of a training step (scripts/bench/bench_core.py, part a).
Here one call of `random_()` fills 64-bit words with 63 random bits each, read as four 16-bit lanes:
the three low lanes are uniform over all 2^16 values, the top one over 2^15 (bit 63 is always 0), so
each lane gets its own threshold and one word gives four mask entries. The keep probability is rounded
to a multiple of 1/65536 (1/32768 in the top lane): 0.1 -> 0.100006.

The mask is applied as ONE multiplication by a tensor of 0 and 1/(1-p) in x's own dtype, which the
backward pass reuses: a `torch.where` with a scalar (what this file did before) cost about 3x more, and
most in bf16 (measured interleaved, fwd + bwd, here). On a GPU torch's own kernel is already fast and is used.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


LANES = 64   # int16 lanes a row of the mask's comparison: a (rows, 4)-shaped compare did not vectorise


def _lane_thresholds(p: float, device) -> torch.Tensor:
    """(LANES,) int16: drop a lane below its threshold (p of the low lanes' [-2^15, 2^15), of the top's [0, 2^15))."""
    return torch.tensor(([round(p * 65536) - 32768] * 3 + [round(p * 32768)]) * (LANES // 4), dtype=torch.int16,
                        device=device)


def _random_lanes(n: int, device) -> torch.Tensor:
    """(rows, LANES) int16 view of (n + 3) // 4 random 64-bit words (little-endian: the top lane last); the tail of
    the last row, past n, is not drawn (and cut off by the callers), so the masks do not depend on LANES."""
    words = torch.empty(-(-n // LANES) * (LANES // 4), dtype=torch.int64, device=device)
    words[: (n + 3) // 4].random_()
    return words.view(torch.int16).view(-1, LANES)


def keep_mask(shape, p: float, device="cpu") -> torch.Tensor:
    """A bool tensor of `shape`, True (keep) with probability 1 - p, drawn from torch's generator."""
    n = math.prod(shape)
    return (_random_lanes(n, device) >= _lane_thresholds(p, device)).view(-1)[:n].view(shape)


def scaled_keep(shape, p: float, dtype, device="cpu") -> torch.Tensor:
    """The inverted-dropout factors: 0 with probability p, else 1 / (1 - p), in `dtype` (keep_mask's draws).

    The comparison writes 0/1 into an int16 tensor, which converts to `dtype` fast; a bool mask's conversion
    and comparison cost ~2x more (a (3500, 1024) bf16 mask: ~5.5 against ~11.5 ms, 1 thread, measured here).
    """
    n = math.prod(shape)
    lanes = _random_lanes(n, device)
    keep = torch.ge(lanes, _lane_thresholds(p, device), out=torch.empty_like(lanes))
    return keep.view(-1)[:n].view(shape).to(dtype).mul_(1.0 / (1.0 - p))


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout: zero each element with probability p, scale the rest by 1 / (1 - p)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return F.dropout(x, p, training=True)
    return x * scaled_keep(x.shape, p, x.dtype, x.device)


class Dropout(nn.Module):
    """nn.Dropout with the cheap CPU mask above (same interface: `p`, train/eval)."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
