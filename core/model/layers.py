"""The building blocks of the encoder and decoder stacks (paper, sections 3.1, 3.3 and 3.5)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .dropout import Dropout


def sinusoidal_table(n_positions: int, d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    layout "interleaved" puts sin and cos of each frequency side by side (the paper);
    "concat" puts all sines first, then all cosines (Marian / OPUS-MT); "fairseq" is fairseq's table
    (NLLB, M2M100, FSMT): concat, with frequencies 10000^(-i/(d_model/2 - 1)). Returns (n_positions, d_model).
    """
    if layout == "fairseq":
        return _fairseq_table(n_positions, d_model)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]                 # (P, 1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = pos * freq                                                           # (P, d_model/2)
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    if layout == "interleaved":
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles[:, : d_model // 2])
    else:
        half = angles.shape[1]
        pe[:, :half], pe[:, half:] = torch.sin(angles), torch.cos(angles[:, : d_model - half])
    return pe.float()


def _fairseq_table(n_positions: int, d_model: int) -> torch.Tensor:
    """fairseq's sinusoids, computed in float32 as fairseq does: the values its models were trained with."""
    half = d_model // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / max(half - 1, 1)))
    angles = torch.arange(n_positions, dtype=torch.float32)[:, None] * freq[None, :]   # (P, d_model/2)
    pe = torch.zeros(n_positions, d_model)
    pe[:, :half], pe[:, half: 2 * half] = torch.sin(angles), torch.cos(angles)       # odd d_model: last column 0
    return pe


class PositionalEncoding(nn.Module):
    """Adds position information to the embeddings: fixed sinusoids (3.5) or learned (Table 3, row E); "relative"
    adds nothing (T5: its positions are a bias on the attention scores, position_bias.py) and only keeps max_len.

    offset: the table row of position 0 (fairseq models number positions from pad_id + 1).
    """

    def __init__(self, d_model: int, max_len: int, kind: str = "sinusoidal", layout: str = "interleaved",
                 offset: int = 0):
        super().__init__()
        self.kind, self.offset, self.max_len = kind, offset, max_len
        if kind == "sinusoidal":
            self.register_buffer("table", sinusoidal_table(max_len + offset, d_model, layout), persistent=False)
        elif kind == "relative":
            self.table = None
        else:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * d_model ** -0.5)

    def forward(self, x, start: int = 0):  # x: (B, T, d_model)
        T = x.size(1)
        if start + T > self.max_len:
            raise ValueError(f"sequence of {start + T} positions is longer than the model's max_len "
                             f"({self.max_len})")
        if self.table is None:
            return x
        first = start + (self.offset if self.kind == "sinusoidal" else 0)
        return x + self.table[first: first + T]


def gelu_tanh(x):
    """GELU's tanh approximation as T5 v1.1 computes it ("gelu_new"), term by term: torch's F.gelu(approximate=
    "tanh") rounds differently by 2e-7 a value, which a tiny random T5's unscaled scores grew to 1e-5 in its maps."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACTIVATIONS = {"relu": F.relu, "swish": F.silu, "gelu": F.gelu, "gelu_tanh": gelu_tanh}


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (3.3); swish (Marian) or GELU (mBART) instead of ReLU as options.

    gated (T5 v1.1, mT5, Flan-T5): FFN(x) = (act(x W1) * x W3) W2, a third matrix W3 gating each hidden unit.
    bias=False: no b1, b2 (T5).
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True,
                 gated: bool = False):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff, bias=bias), nn.Linear(d_ff, d_model, bias=bias)
        self.w_3 = nn.Linear(d_model, d_ff, bias=bias) if gated else None
        self.act = ACTIVATIONS[activation]
        self.dropout = Dropout(dropout)  # inside the FFN, as in tensor2tensor's relu_dropout

    def forward(self, x):
        hidden = self.act(self.w_1(x))                                  # (B, T, d_ff)
        return self.w_2(self.dropout(hidden if self.w_3 is None else hidden * self.w_3(x)))


def layer_norm(d_model: int, eps: float, rms: bool = False) -> nn.Module:
    """LayerNorm (Ba et al. 2016), or with rms RMSNorm: no mean subtracted, no bias (Zhang & Sennrich 2019; T5)."""
    return nn.RMSNorm(d_model, eps=eps) if rms else nn.LayerNorm(d_model, eps=eps)


class Residual(nn.Module):
    """A residual connection around a sublayer, with dropout and LayerNorm (3.1, 5.4).

    post-norm (paper): LayerNorm(x + Dropout(Sublayer(x))); pre-norm: x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, d_model: int, dropout: float, norm: str, eps: float, rms: bool = False):
        super().__init__()
        self.norm = layer_norm(d_model, eps, rms)
        self.dropout = Dropout(dropout)
        self.pre = norm == "pre"

    def forward(self, x, sublayer):
        """sublayer: a function of the (normalised) input returning (output, attention or None)."""
        out, probs = sublayer(self.norm(x) if self.pre else x)
        x = x + self.dropout(out)
        return (x if self.pre else self.norm(x)), probs


def attention(cfg) -> MultiHeadAttention:
    """One multi-head attention of a layer, with the config's options (head width, biases, scaling)."""
    return MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout, cfg.d_kv, cfg.bias, cfg.scale_scores)


def feed_forward(cfg) -> PositionwiseFeedForward:
    """A layer's FFN with the config's options (activation, gating, biases)."""
    return PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.ffn_dropout, cfg.bias, cfg.gated_ffn)


def residual(cfg) -> Residual:
    """A residual connection with the config's norm (post or pre, LayerNorm or RMSNorm)."""
    return Residual(cfg.d_model, cfg.dropout, cfg.norm, cfg.layer_norm_eps, cfg.rms_norm)


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention, then the feed-forward network (3.1)."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = attention(cfg)
        self.ffn = feed_forward(cfg)
        self.res_attn, self.res_ffn = (residual(cfg) for _ in range(2))

    def forward(self, x, src_mask, need_weights=False, head_mask=None, need_vectors=False, position_bias=None):
        """head_mask: None or (h,) factors on the self-attention heads; need_vectors: (probs, q, k) in place
        of the probabilities (see MultiHeadAttention); position_bias: T5's, added to every head's scores."""
        x, probs = self.res_attn(x, lambda y: self.self_attn(y, y, y, src_mask, need_weights, head_mask=head_mask,
                                                              need_vectors=need_vectors, position_bias=position_bias))
        x, _ = self.res_ffn(x, lambda y: (self.ffn(y), None))
        return x, probs


class DecoderLayer(nn.Module):
    """One decoder layer: masked self-attention, attention over the encoder output, then the FFN (3.1)."""

    def __init__(self, cfg):
        super().__init__()
        self.self_attn = attention(cfg)
        self.cross_attn = attention(cfg)
        self.ffn = feed_forward(cfg)
        self.res_self, self.res_cross, self.res_ffn = (residual(cfg) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask, need_weights=False, cache=None,
                self_head_mask=None, cross_head_mask=None, need_vectors=False, position_bias=None):
        """cache: None, or a dict {"self": {}, "cross": {}} kept between incremental decoding steps.
        self_head_mask / cross_head_mask: None or (h,) factors on the heads of each attention.
        need_vectors: each attention gives (probs, q, k) in place of its probabilities (MultiHeadAttention).
        position_bias: T5's, added to the self-attention scores (encoder-decoder attention has none)."""
        c_self = c_cross = None
        if cache is not None:
            c_self, c_cross = cache.setdefault("self", {}), cache.setdefault("cross", {})
        x, self_probs = self.res_self(
            x, lambda y: self.self_attn(y, y, y, tgt_mask, need_weights, cache=c_self, head_mask=self_head_mask,
                                        need_vectors=need_vectors, position_bias=position_bias))
        x, cross_probs = self.res_cross(
            x, lambda y: self.cross_attn(y, memory, memory, src_mask, need_weights, cache=c_cross,
                                         static_kv=True, head_mask=cross_head_mask, need_vectors=need_vectors))
        x, _ = self.res_ffn(x, lambda y: (self.ffn(y), None))
        return x, self_probs, cross_probs
