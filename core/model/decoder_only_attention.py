"""Causal self-attention of a decoder-only model: the paper's masked multi-head attention (3.2.3), with grouped-query
attention (Ainslie et al. 2023: groups of query heads share one key and value head) and rotary positions."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .dropout import dropout
from .rotary import RotaryEmbedding


def causal_bias(Tq: int, Tk: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """(Tq, Tk) additive mask, 0 where query i (at position Tk - Tq + i) may see key j (j <= its position), -inf
    elsewhere. Made once per forward pass and shared by every layer."""
    return torch.full((Tq, Tk), float("-inf"), device=device, dtype=dtype).triu_(Tk - Tq + 1)


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention with h query heads and h_kv <= h key/value heads (h_kv = h: the paper's).

    Query head i reads key/value head i // (h / h_kv), as transformers' repeat_kv does: kv_groups() lists them.
    """

    def __init__(self, d_model: int, h: int, h_kv: int | None = None, d_k: int | None = None,
                 qkv_bias: bool = True, out_bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.h, self.h_kv = h, h_kv or h
        assert h % self.h_kv == 0 and (d_k is not None or d_model % h == 0)
        self.d_k = d_k or d_model // h
        self.w_q = nn.Linear(d_model, h * self.d_k, bias=qkv_bias)
        self.w_k = nn.Linear(d_model, self.h_kv * self.d_k, bias=qkv_bias)
        self.w_v = nn.Linear(d_model, self.h_kv * self.d_k, bias=qkv_bias)
        self.w_o = nn.Linear(h * self.d_k, d_model, bias=out_bias)
        self.dropout = dropout

    def kv_groups(self) -> list[list[int]]:
        """The query heads that share each key/value head: [[0, 1], [2, 3], ...]; [[0], [1], ...] without GQA."""
        g = self.h // self.h_kv
        return [list(range(j * g, (j + 1) * g)) for j in range(self.h_kv)]

    def _project(self, x):
        """x (B, T, d_model) -> q (B, h, T, d_k), k and v (B, h_kv, T, d_k), by one matmul of the stacked weights."""
        B, T, _ = x.shape
        lins = (self.w_q, self.w_k, self.w_v)
        w = torch.cat([lin.weight for lin in lins])
        b = None if self.w_q.bias is None else torch.cat([lin.bias for lin in lins])
        q, k, v = F.linear(x, w, b).split([self.h * self.d_k, self.h_kv * self.d_k, self.h_kv * self.d_k], dim=-1)
        return (q.view(B, T, self.h, self.d_k).transpose(1, 2), k.view(B, T, self.h_kv, self.d_k).transpose(1, 2),
                v.view(B, T, self.h_kv, self.d_k).transpose(1, 2))

    def forward(self, x, mask, rotary=None, need_weights=False, head_mask=None, cache=None, need_vectors=False):
        """x: (B, T, d_model); mask: the (T, start + T) causal_bias, or None for a single new position.

        rotary: None, or the (cos, sin) of RotaryEmbedding.angles for these positions. need_weights: also return the
        probabilities (B, h, T, start + T), one map per query head; otherwise torch's fused kernel runs.
        head_mask: None or (h,) factors on each query head's output before W^O (0: the head switched off).
        cache: None, or a dict holding this layer's keys and values of the earlier positions (generation).
        need_vectors: (probs, q, k) in place of the probabilities: q (B, h, T, d_k), k (B, h, start + T, d_k)
        (each query head's keys: shared ones repeated), after the rotation, before the 1/sqrt(d_k) scaling.
        """
        q, k, v = self._project(x)
        if rotary is not None:
            q, k = RotaryEmbedding.rotate(q, *rotary), RotaryEmbedding.rotate(k, *rotary)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        B, _, T, _ = q.shape
        g = self.h // self.h_kv
        p_drop = self.dropout if self.training else 0.0
        need_weights = need_weights or need_vectors
        if need_weights or p_drop > 0:
            # grouped: (B, h_kv, g, T, d_k) queries against (B, h_kv, 1, Tk, d_k) keys, never copying the keys
            qg = (q * (1.0 / math.sqrt(self.d_k))).view(B, self.h_kv, g, T, self.d_k)
            scores = qg @ k.unsqueeze(2).transpose(-2, -1)                 # (B, h_kv, g, T, Tk)
            if mask is not None:
                scores.add_(mask)                                          # in place: no second (T, Tk) per head
            wide = scores.dtype in (torch.bfloat16, torch.float16)
            probs = scores.softmax(dim=-1, dtype=torch.float32).to(scores.dtype) if wide else scores.softmax(-1)
            del scores
            out = (dropout(probs, p_drop) @ v.unsqueeze(2)).view(B, self.h, T, self.d_k)
            probs = probs.view(B, self.h, T, -1)                            # (B, h, T, Tk): per query head
        else:
            causal = mask is not None and mask.shape[0] == mask.shape[1]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if causal else mask, is_causal=causal,
                                                 enable_gqa=g > 1)
            probs = None
        if head_mask is not None:
            out = out * head_mask.view(1, -1, 1, 1).to(out.dtype)
        out = self.w_o(out.transpose(1, 2).reshape(B, T, self.h * self.d_k))   # (B, T, d_model)
        if need_vectors:
            return out, (probs, q, k.repeat_interleave(g, dim=1) if g > 1 else k)
        return out, (probs if need_weights else None)
