"""Scaled dot-product attention and multi-head attention (paper, section 3.2)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .dropout import dropout


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p: float = 0.0, bias=None, scale: bool = True):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, returning the output and the probabilities.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v); mask: bool, broadcastable to
    (..., Tq, Tk), True where a query may attend to a key. Masked keys get exactly 0.
    dropout_p: dropout on the probabilities that weight V (training); the returned ones are undropped.
    bias: None, or a float term added to the scores before the softmax, broadcastable to (..., Tq, Tk): T5's
    relative position bias (core/model/position_bias.py). scale=False leaves out the 1/sqrt(d_k), as T5 does.
    """
    # q is scaled before the product, and the mask is added as 0 / -inf: on a CPU both are cheaper than
    # dividing and masked_fill-ing the larger (Tq, Tk) scores (attention fwd + bwd 1.1x, measured here)
    scores = ((q * (1.0 / math.sqrt(q.size(-1)))) if scale else q) @ k.transpose(-2, -1)     # (..., Tq, Tk)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores + torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill_(
            ~mask, float("-inf"))
    # bf16/fp16 scores (autocast) are softmaxed in fp32 and rounded back: on a CPU torch's bf16 softmax is
    # ~2x slower forward and ~4x backward than fp32 with the two casts (measured here; whole steps: README)
    wide = scores.dtype in (torch.bfloat16, torch.float16)
    probs = scores.softmax(dim=-1, dtype=torch.float32).to(scores.dtype) if wide else scores.softmax(dim=-1)
    return dropout(probs, dropout_p) @ v, probs


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)."""

    def __init__(self, d_model: int, h: int, dropout: float = 0.0, d_k: int | None = None, bias: bool = True,
                 scale: bool = True):
        """d_k: each head's width (d_model / h unless given: T5 v1.1's may differ); bias: the four linear layers
        have biases (T5's have none); scale: divide the scores by sqrt(d_k) (T5 does not)."""
        super().__init__()
        assert d_k is not None or d_model % h == 0
        self.h, self.d_k, self.scale = h, d_k or d_model // h, scale
        inner = self.h * self.d_k
        self.w_q = nn.Linear(d_model, inner, bias=bias)
        self.w_k = nn.Linear(d_model, inner, bias=bias)
        self.w_v = nn.Linear(d_model, inner, bias=bias)
        self.w_o = nn.Linear(inner, d_model, bias=bias)
        self.dropout = dropout  # on the attention probabilities, as in the reference implementations

    def _split(self, x):  # (B, T, d_model) -> (B, h, T, d_k)
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)

    def _project(self, x, *linears):
        """x (B, T, d_model) through one or more of W^Q, W^K, W^V -> a (B, h, T, d_k) tensor for each.

        Several projections of the same input run as ONE matmul with their weights stacked: on a CPU
        one (d_model x 3 d_model) product is faster than three (d_model x d_model) ones.
        """
        if len(linears) == 1:
            return [self._split(linears[0](x))]
        w = torch.cat([lin.weight for lin in linears])                  # (n * h d_k, d_model)
        b = None if linears[0].bias is None else torch.cat([lin.bias for lin in linears])
        return [self._split(y) for y in F.linear(x, w, b).chunk(len(linears), dim=-1)]

    def forward(self, query, key, value, mask=None, need_weights=False, cache=None, static_kv=False,
                head_mask=None, need_vectors=False, position_bias=None):
        """query: (B, Tq, d_model); key/value: (B, Tk, d_model); mask: bool (B, 1|h, 1|Tq, Tk).

        need_weights: also return the attention probabilities (B, h, Tq, Tk); otherwise use torch's
        fused kernel. cache: a dict for incremental decoding; static_kv=True (cross-attention)
        projects the encoder memory once, otherwise new keys/values are appended to the cache.
        head_mask: None, or (h,) factors on each head's output before W^O: 0 switches a head off
        (head ablation). It travels with the call, so a shared model is never changed by it.
        need_vectors: return (probs, q, k) in place of the probabilities: the per-head queries
        q (B, h, Tq, d_k) and keys k (B, h, Tk, d_k) after W^Q, W^K and the split into heads, before
        the 1/sqrt(d_k) scaling, from this very pass (implies need_weights; AttentionViz-style views).
        position_bias: None, or (1|B, h, Tq, Tk) added to the scores before the softmax (T5's relative positions).
        """
        if cache is not None and static_kv and "k" in cache:            # the memory is projected already
            (q,), k, v = self._project(query, self.w_q), cache["k"], cache["v"]
        else:
            if query is key is value:                                   # self-attention
                q, k, v = self._project(query, self.w_q, self.w_k, self.w_v)
            elif key is value:                                          # attention over the encoder output
                (q,), (k, v) = self._project(query, self.w_q), self._project(key, self.w_k, self.w_v)
            else:
                (q,), (k,), (v,) = (self._project(x, w) for x, w in ((query, self.w_q), (key, self.w_k),
                                                                     (value, self.w_v)))
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        p_drop = self.dropout if self.training else 0.0
        # On a CPU, training takes our own path even without dropout: torch's fused kernel draws its dropout
        # mask with the slow bernoulli_ (core/dropout.py), and its bf16 backward made a news-small step 1.3x
        # slower than this path's matmuls and softmax (measured interleaved, 2 threads, torch 2.13).
        # T5's attention (unscaled, biased) takes this path too: torch's fused kernel rounds it otherwise than the
        # softmax written out, which a tiny random mT5 grew to 1.3e-4 in its logits against transformers' (0 on this
        # path, which is theirs)
        need_weights = need_weights or need_vectors
        t5 = position_bias is not None or not self.scale
        if need_weights or t5 or (q.device.type == "cpu" and torch.is_grad_enabled()):
            out, probs = scaled_dot_product_attention(q, k, v, mask, p_drop, position_bias, self.scale)
            probs = probs if need_weights else None
        else:
            out, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop), None
        if head_mask is not None:
            out = out * head_mask.view(1, -1, 1, 1).to(out.dtype)
        B, _, Tq, _ = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, self.h * self.d_k)     # (B, Tq, d_model)
        return self.w_o(out), ((probs, q, k) if need_vectors else probs)
