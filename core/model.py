"""The encoder-decoder Transformer (paper, section 3 and Figure 1)."""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .layers import DecoderLayer, EncoderLayer, PositionalEncoding


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, S) token ids -> bool (B, 1, 1, S): True where a key is a real token, False at padding."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, T) -> bool (B, 1, T, T): position t attends to non-padding positions <= t only.

    Position 0, the decoder start token, is never padding: Marian starts decoding with <pad> itself,
    and masking it would leave the first row with nothing to attend to (softmax of all -inf = NaN).
    """
    T = tgt.size(1)
    lower = torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()
    real = tgt != pad_id                                            # (B, T)
    real[:, 0] = True
    return real[:, None, None, :] & lower


@dataclass
class Attentions:
    """Attention probabilities of one forward pass, each a list over layers of (B, h, Tq, Tk)."""
    enc_self: list
    dec_self: list
    cross: list


class Transformer(nn.Module):
    """Encoder, decoder, shared embeddings and the pre-softmax projection (Figure 1, 3.4)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.src_pos = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.positions, cfg.pe_layout)
        self.tgt_pos = (self.src_pos if cfg.positions == "sinusoidal"
                        else PositionalEncoding(cfg.d_model, cfg.max_len, cfg.positions, cfg.pe_layout))
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_dec))
        # pre-norm stacks end with a LayerNorm; post-norm ones already end normalised
        self.enc_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm == "pre" else nn.Identity()
        self.dec_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm == "pre" else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.share_embeddings:
            self.generator.weight = self.src_embed.weight   # 3.4: the same matrix, three times
        self.logits_bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.final_logits_bias else None
        self._init_weights()

    def _init_weights(self):
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
        # N(0, d_model^-0.5), so that embeddings * sqrt(d_model) have unit scale
        nn.init.normal_(self.src_embed.weight, std=self.cfg.d_model ** -0.5)
        if not self.cfg.share_embeddings:
            nn.init.normal_(self.tgt_embed.weight, std=self.cfg.d_model ** -0.5)
            nn.init.normal_(self.generator.weight, std=self.cfg.d_model ** -0.5)

    def _embed(self, tokens, embed, pos, start=0):
        scale = math.sqrt(self.cfg.d_model) if self.cfg.scale_embeddings else 1.0
        return self.dropout(pos(embed(tokens) * scale, start))   # (B, T, d_model)

    def encode(self, src, need_weights=False):
        """src: (B, S) ids -> memory (B, S, d_model), src_mask (B, 1, 1, S), encoder attentions."""
        src_mask = padding_mask(src, self.cfg.pad_id)
        x, attns = self._embed(src, self.src_embed, self.src_pos), []
        for layer in self.encoder:
            x, probs = layer(x, src_mask, need_weights)
            attns.append(probs)
        return self.enc_norm(x), src_mask, attns

    def decode(self, tgt_in, memory, src_mask, need_weights=False, cache=None, start=0):
        """tgt_in: (B, T) decoder inputs -> hidden (B, T, d_model), self and cross attentions.

        cache: a list with one dict per decoder layer for incremental decoding; then tgt_in holds
        only the new positions, starting at position `start`.
        """
        tgt_mask = causal_mask(tgt_in, self.cfg.pad_id) if cache is None else None
        x = self._embed(tgt_in, self.tgt_embed, self.tgt_pos, start)
        self_attns, cross_attns = [], []
        for i, layer in enumerate(self.decoder):
            x, s, c = layer(x, memory, src_mask, tgt_mask, need_weights, None if cache is None else cache[i])
            self_attns.append(s)
            cross_attns.append(c)
        return self.dec_norm(x), self_attns, cross_attns

    def project(self, hidden):
        """The pre-softmax linear transformation: (B, T, d_model) -> logits (B, T, vocab)."""
        logits = self.generator(hidden)
        return logits if self.logits_bias is None else logits + self.logits_bias

    def forward(self, src, tgt_in, need_weights=False):
        """Teacher-forced pass: logits (B, T, vocab), plus Attentions when need_weights."""
        memory, src_mask, enc = self.encode(src, need_weights)
        hidden, dec, cross = self.decode(tgt_in, memory, src_mask, need_weights)
        logits = self.project(hidden)
        return (logits, Attentions(enc, dec, cross)) if need_weights else logits

    def attention_modules(self):
        """{"enc_self": [...], "dec_self": [...], "cross": [...]}: the MultiHeadAttention of each layer."""
        return {"enc_self": [l.self_attn for l in self.encoder],
                "dec_self": [l.self_attn for l in self.decoder],
                "cross": [l.cross_attn for l in self.decoder]}

    @contextlib.contextmanager
    def ablate_heads(self, heads):
        """Switch heads off inside a `with` block: heads is an iterable of (kind, layer, head),
        kind one of "enc_self", "dec_self", "cross". Each head's output is zeroed before W^O."""
        modules = self.attention_modules()
        touched = []
        try:
            for kind, layer, head in heads:
                if kind not in modules or not 0 <= layer < len(modules[kind]) or not 0 <= head < self.cfg.h:
                    raise ValueError(f"no head {kind} layer {layer} head {head} in this model")
                m = modules[kind][layer]
                if m.head_mask is None:
                    m.head_mask = torch.ones(self.cfg.h, device=self.generator.weight.device)
                    touched.append(m)
                m.head_mask[head] = 0.0
            yield self
        finally:
            for m in touched:
                m.head_mask = None


def label_smoothed_loss(logits, target, epsilon: float, pad_id: int):
    """Cross entropy with label smoothing (5.4), averaged over non-padding target tokens.

    The target distribution is (1 - epsilon) on the true class plus epsilon / V on every class
    (PyTorch's convention, so the true class gets 1 - epsilon + epsilon / V).
    Returns (loss, number of target tokens).
    """
    logits = logits.reshape(-1, logits.size(-1)).float()
    target = target.reshape(-1)
    loss = F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=epsilon, reduction="sum")
    n_tokens = (target != pad_id).sum()
    return loss / n_tokens.clamp(min=1), n_tokens
