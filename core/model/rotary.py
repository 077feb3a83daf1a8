"""Rotary position embeddings (RoPE, Su et al. 2021): each pair of a query's and a key's dimensions turned by an
angle proportional to the position, so that q_m . k_n depends on the positions only through m - n.

The pairs are (i, i + rotary_dim / 2) ("rotate_half", GPT-NeoX's and Llama's layout), and only the first
rotary_dim of each head's d_k dimensions turn (GPT-NeoX / Pythia: a quarter of them; the rest pass unchanged).
"""
from __future__ import annotations

import math

import torch
from torch import nn


def inverse_frequencies(rotary_dim: int, base: float, scaling: dict | None = None) -> torch.Tensor:
    """theta_i = base^(-2i / rotary_dim), i < rotary_dim / 2, in float32 (as the checkpoints were trained with);
    with scaling {"rope_type": "llama3", ...}, Llama 3.1's longer-context rescaling of the low frequencies."""
    inv_freq = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.int64).float() / rotary_dim))
    kind = (scaling or {}).get("rope_type", "default")
    if kind == "default":
        return inv_freq
    if kind != "llama3":
        raise ValueError(f"rope_scaling type {kind!r} is not built")
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_len = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    # wavelengths longer than the original context are slowed by `factor`, shorter ones kept, those between blended
    slowed = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    blended = (1 - smooth) * slowed / factor + smooth * slowed
    medium = ~(wavelen < old_len / high) * ~(wavelen > old_len / low)
    return torch.where(medium, blended, slowed)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension: the 90-degree turn of each pair."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    """The cos and sin of every position's angles, and their application to queries and keys."""

    def __init__(self, rotary_dim: int, base: float = 10000.0, scaling: dict | None = None):
        super().__init__()
        self.rotary_dim = rotary_dim
        self.register_buffer("inv_freq", inverse_frequencies(rotary_dim, base, scaling), persistent=False)

    def angles(self, T: int, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin), each (T, rotary_dim), for positions start .. start + T - 1: made once per forward pass."""
        pos = torch.arange(start, start + T, device=self.inv_freq.device, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]                  # (T, rotary_dim / 2)
        emb = torch.cat((freqs, freqs), dim=-1)                         # (T, rotary_dim)
        return emb.cos(), emb.sin()

    @staticmethod
    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x (B, heads, T, d_k) with its first rotary_dim dimensions turned by the angles of its positions."""
        r = cos.shape[-1]
        if r == x.shape[-1]:
            return x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype)
        turned, passed = x[..., :r], x[..., r:]
        return torch.cat((turned * cos.to(x.dtype) + rotate_half(turned) * sin.to(x.dtype), passed), dim=-1)
