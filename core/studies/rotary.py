"""Rotary positions (RoPE, Su et al. 2021) made visible: each pair's angle over positions, and a query-key score
that depends on the two positions only through their distance m - n. Pure functions on core.model.rotary's own
frequencies and rotation, so the pictures show exactly what a rotary model computes."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from core.model.rotary import RotaryEmbedding, inverse_frequencies


@dataclass
class RopeSettings:
    """The numbers that fix a rotary model's rotation: base, d_k, how many of its dimensions turn (rotary_dim)."""
    base: float = 10000.0
    d_k: int = 64
    rotary_dim: int | None = None       # None: all d_k (Llama, Qwen); Pythia turns a quarter
    scaling: dict | None = None         # Llama 3.1's rope_scaling, or None

    @property
    def turned(self) -> int:
        return self.rotary_dim or self.d_k


def settings_of(cfg) -> RopeSettings | None:
    """A model config's RopeSettings when it uses rotary positions, else None."""
    if getattr(cfg, "positions", None) != "rotary":
        return None
    return RopeSettings(float(cfg.rope_base), int(cfg.d_k), cfg.rotary_dim, getattr(cfg, "rope_scaling", None))


def pair_angles(n_positions: int, rope: RopeSettings) -> np.ndarray:
    """(n_positions, turned / 2): the angle, position x theta_i, by which pair i is turned at each position,
    taken mod 2 pi (radians)."""
    theta = inverse_frequencies(rope.turned, rope.base, rope.scaling).double()        # (turned / 2,)
    pos = torch.arange(n_positions, dtype=torch.float64)
    return torch.remainder(pos[:, None] * theta[None, :], 2 * math.pi).numpy()


def rotated(x: np.ndarray, n_positions: int, rope: RopeSettings) -> np.ndarray:
    """One vector x (d_k,) placed at every position 0 .. n_positions - 1 and turned there: (n_positions, d_k),
    by RotaryEmbedding itself (float32, as the models compute it)."""
    emb = RotaryEmbedding(rope.turned, rope.base, rope.scaling)
    cos, sin = emb.angles(n_positions)                                                # (P, turned) each
    x = torch.as_tensor(np.asarray(x, dtype=np.float32)).expand(n_positions, -1)      # (P, d_k)
    return RotaryEmbedding.rotate(x, cos, sin).numpy()


def position_scores(q: np.ndarray, k: np.ndarray, n_positions: int, rope: RopeSettings) -> np.ndarray:
    """(P, P): entry (m, n) is q turned to position m dotted with k turned to position n, the part of a score
    that positions change. It is constant along every diagonal: it depends on m - n only."""
    return rotated(q, n_positions, rope).astype(np.float64) @ rotated(k, n_positions, rope).astype(np.float64).T


def score_at_distance(q: np.ndarray, k: np.ndarray, distances: np.ndarray, rope: RopeSettings) -> np.ndarray:
    """The same score written as a function of the distance d = m - n alone (no positions at all): each pair
    (q1, q2), (k1, k2) adds (q1 k1 + q2 k2) cos(d theta_i) + (q1 k2 - q2 k1) sin(d theta_i); the dimensions that
    do not turn add their plain dot product. (distances,) -> (distances,)."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    r = rope.turned
    theta = inverse_frequencies(r, rope.base, rope.scaling).double().numpy()         # (r / 2,)
    q1, q2, k1, k2 = q[: r // 2], q[r // 2: r], k[: r // 2], k[r // 2: r]             # rotate_half's pairs
    phase = np.asarray(distances, dtype=np.float64)[:, None] * theta[None, :]        # (D, r / 2)
    turned = np.cos(phase) @ (q1 * k1 + q2 * k2) + np.sin(phase) @ (q1 * k2 - q2 * k1)
    return turned + float(q[r:] @ k[r:])


def example_vectors(d_k: int, kind: str = "ones", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A query and a key to turn: all ones (the score then falls off with distance, the decay RoPE's paper
    shows), or standard normal numbers drawn with `seed`."""
    if kind == "ones":
        return np.ones(d_k), np.ones(d_k)
    g = np.random.default_rng(seed)
    return g.standard_normal(d_k), g.standard_normal(d_k)
