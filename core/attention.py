"""Scaled dot-product attention and multi-head attention (paper, section 3.2)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the output and the probabilities.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v); mask: bool, broadcastable to
    (..., Tq, Tk), True where a query may attend to a key. Masked keys get exactly 0.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))       # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = scores.softmax(dim=-1)
    return probs @ v, probs


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)."""

    def __init__(self, d_model: int, h: int, dropout: float = 0.0):
        super().__init__()
        assert d_model % h == 0
        self.h, self.d_k = h, d_model // h
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = dropout  # on the attention probabilities, as in the reference implementations
        self.head_mask = None   # (h,) or None; set by core.model.Transformer.ablate_heads

    def _split(self, x):  # (B, T, d_model) -> (B, h, T, d_k)
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask=None, need_weights=False, cache=None, static_kv=False):
        """query: (B, Tq, d_model); key/value: (B, Tk, d_model); mask: bool (B, 1|h, 1|Tq, Tk).

        need_weights: also return the attention probabilities (B, h, Tq, Tk); otherwise use torch's
        fused kernel. cache: a dict for incremental decoding; static_kv=True (cross-attention)
        projects the encoder memory once, otherwise new keys/values are appended to the cache.
        self.head_mask, when set, holds (h,) factors on each head's output before W^O: 0 switches
        a head off (head ablation).
        """
        q = self._split(self.w_q(query))                                # (B, h, Tq, d_k)
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k, v = self._split(self.w_k(key)), self._split(self.w_v(value))  # (B, h, Tk, d_k)
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        p_drop = self.dropout if self.training else 0.0
        if need_weights:
            out, probs = scaled_dot_product_attention(q, k, v, mask)
            if p_drop:
                out = F.dropout(probs, p_drop) @ v
        else:
            out, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop), None
        if self.head_mask is not None:
            out = out * self.head_mask.view(1, -1, 1, 1).to(out.dtype)
        B, _, Tq, _ = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, self.h * self.d_k)     # (B, Tq, d_model)
        return self.w_o(out), probs
