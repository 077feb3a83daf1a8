"""The encoder-decoder Transformer (paper, section 3 and Figure 1)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral

import torch
from torch import nn

from .config import TransformerConfig
from .dropout import Dropout
from .layers import DecoderLayer, EncoderLayer, PositionalEncoding, layer_norm
from .loss import projected_loss
from .position_bias import RelativePositionBias


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
        self.src_embed = nn.Embedding(cfg.source_vocab_size, cfg.d_model)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.src_pos = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.positions, cfg.pe_layout, cfg.pos_offset)
        self.tgt_pos = (self.src_pos if cfg.positions == "sinusoidal" else
                        PositionalEncoding(cfg.d_model, cfg.max_len, cfg.positions, cfg.pe_layout, cfg.pos_offset))
        self.dropout = Dropout(cfg.dropout)
        # mBART: a LayerNorm on each side's embeddings + positions (None: the paper has none)
        self.src_embed_norm, self.tgt_embed_norm = (layer_norm(cfg.d_model, cfg.layer_norm_eps, cfg.rms_norm)
                                                    if cfg.embed_norm else None for _ in range(2))
        # T5: one table of position biases per stack, made once and added in each of its layers (None: the paper's)
        relative = cfg.positions == "relative"
        self.enc_pos_bias, self.dec_pos_bias = (
            RelativePositionBias(cfg.h, cfg.rel_buckets, cfg.rel_max_distance, bidirectional=both) if relative else None
            for both in (True, False))
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.N))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.N_dec))
        # pre-norm stacks end with a LayerNorm; post-norm ones already end normalised
        self.enc_norm, self.dec_norm = (layer_norm(cfg.d_model, cfg.layer_norm_eps, cfg.rms_norm)
                                        if cfg.norm == "pre" else nn.Identity() for _ in range(2))
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.tied_output = cfg.share_embeddings and cfg.tie_output
        if self.tied_output:
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
        if not self.tied_output:
            nn.init.normal_(self.generator.weight, std=self.cfg.d_model ** -0.5)

    def _embed(self, tokens, embed, pos, start=0, norm=None):
        scale = math.sqrt(self.cfg.d_model) if self.cfg.scale_embeddings else 1.0
        x = pos(embed(tokens) * scale, start)                    # (B, T, d_model)
        return self.dropout(x if norm is None else norm(x))

    def encode(self, src, need_weights=False, head_mask=None, need_vectors=False):
        """src: (B, S) ids -> memory (B, S, d_model), src_mask (B, 1, 1, S), encoder attentions.

        head_mask: None, or a dict as ablate_heads returns; its "enc_self" entry switches heads off.
        need_vectors: each layer's attention is (probs, q, k), q and k (B, h, S, d_k) (MultiHeadAttention).
        """
        src_mask = padding_mask(src, self.cfg.pad_id)
        x, attns = self._embed(src, self.src_embed, self.src_pos, norm=self.src_embed_norm), []
        S = src.size(1)
        bias = None if self.enc_pos_bias is None else self.enc_pos_bias(S, S)      # (1, h, S, S)
        for layer, m in zip(self.encoder, self._layer_masks(head_mask, "enc_self")):
            x, probs = layer(x, src_mask, need_weights, head_mask=m, need_vectors=need_vectors, position_bias=bias)
            attns.append(probs)
        return self.enc_norm(x), src_mask, attns

    def decode(self, tgt_in, memory, src_mask, need_weights=False, cache=None, start=0, head_mask=None,
               need_vectors=False):
        """tgt_in: (B, T) decoder inputs -> hidden (B, T, d_model), self and cross attentions.

        cache: a list with one dict per decoder layer for incremental decoding; then tgt_in holds
        only the new positions, starting at position `start`. head_mask: None, or a dict as
        ablate_heads returns; its "dec_self" and "cross" entries switch heads off. need_vectors: each
        attention is (probs, q, k): q (B, h, T, d_k), k (B, h, T or S, d_k) (MultiHeadAttention).
        """
        tgt_mask = causal_mask(tgt_in, self.cfg.pad_id) if cache is None else None
        x = self._embed(tgt_in, self.tgt_embed, self.tgt_pos, start, self.tgt_embed_norm)
        T = tgt_in.size(1)
        bias = None if self.dec_pos_bias is None else self.dec_pos_bias(T, start + T, start)   # (1, h, T, start + T)
        self_attns, cross_attns = [], []
        masks = zip(self._layer_masks(head_mask, "dec_self"), self._layer_masks(head_mask, "cross"))
        for i, (layer, (m_self, m_cross)) in enumerate(zip(self.decoder, masks)):
            x, s, c = layer(x, memory, src_mask, tgt_mask, need_weights, None if cache is None else cache[i],
                            self_head_mask=m_self, cross_head_mask=m_cross, need_vectors=need_vectors,
                            position_bias=bias)
            self_attns.append(s)
            cross_attns.append(c)
        return self.dec_norm(x), self_attns, cross_attns

    def _scaled(self, hidden):
        """T5 with a tied output scales the decoder's output by d_model^-0.5 first (cfg.scale_output)."""
        return hidden * self.cfg.d_model ** -0.5 if self.cfg.scale_output else hidden

    def project(self, hidden):
        """The pre-softmax linear transformation: (B, T, d_model) -> logits (B, T, vocab)."""
        logits = self.generator(self._scaled(hidden))
        return logits if self.logits_bias is None else logits + self.logits_bias

    def forward(self, src, tgt_in, need_weights=False, head_mask=None, tgt_out=None):
        """Teacher-forced pass: logits (B, T, vocab), plus Attentions when need_weights.

        head_mask: None, or a dict as ablate_heads returns, to switch heads off for this call only.
        tgt_out: (B, T) the targets; then the pass returns (label-smoothed loss, target tokens) in place of
        the logits, with the projection and the loss fused (core/model/loss.py: faster on a CPU).
        """
        memory, src_mask, enc = self.encode(src, need_weights, head_mask)
        hidden, dec, cross = self.decode(tgt_in, memory, src_mask, need_weights, head_mask=head_mask)
        if tgt_out is not None:
            return projected_loss(self._scaled(hidden), self.generator.weight, self.logits_bias, tgt_out,
                                  self.cfg.label_smoothing, self.cfg.pad_id)
        logits = self.project(hidden)
        return (logits, Attentions(enc, dec, cross)) if need_weights else logits

    def attention_modules(self):
        """{"enc_self": [...], "dec_self": [...], "cross": [...]}: the MultiHeadAttention of each layer."""
        return {"enc_self": [layer.self_attn for layer in self.encoder],
                "dec_self": [layer.self_attn for layer in self.decoder],
                "cross": [layer.cross_attn for layer in self.decoder]}

    def ablate_heads(self, heads) -> dict:
        """The head_mask that switches heads off; the model itself is never changed.

        heads: an iterable of (kind, layer, head), kind one of "enc_self", "dec_self", "cross", counted
        from 0. Returns {kind: (N_kind, h) float tensor, 1 for a head kept and 0 for one switched off},
        only for the kinds named. Pass it on with the inputs, e.g. model(src, tgt_in, head_mask=mask),
        greedy_search(model, src, head_mask=mask) or TranslationModel.translate(texts, head_mask=mask):
        each switched-off head's output is zeroed before W^O, in that call only, so one call's
        ablation can never leak into another running at the same time on the same model.
        """
        layers = {kind: len(ms) for kind, ms in self.attention_modules().items()}
        mask = {}
        for kind, layer, head in heads:
            if (kind not in layers or not isinstance(layer, Integral) or not isinstance(head, Integral)
                    or not 0 <= layer < layers[kind] or not 0 <= head < self.cfg.h):
                raise ValueError(f"There is no head {kind} layer {layer} head {head} in this model: it has "
                                 f"{self.cfg.N} encoder and {self.cfg.N_dec} decoder layers of {self.cfg.h} heads "
                                 f"(counted from 0), and kinds {', '.join(layers)}.")
            if kind not in mask:
                mask[kind] = torch.ones(layers[kind], self.cfg.h, device=self.generator.weight.device)
            mask[kind][layer, head] = 0.0
        return mask

    def _layer_masks(self, head_mask, kind) -> list:
        """One (h,) head mask or None per layer of `kind`, from a head_mask dict (None: every head on)."""
        n = len(self.encoder if kind == "enc_self" else self.decoder)
        if head_mask and not set(head_mask) <= {"enc_self", "dec_self", "cross"}:
            raise ValueError(f"head_mask has keys {sorted(head_mask)}; they can only be "
                             f"'enc_self', 'dec_self' and 'cross'.")
        m = None if head_mask is None else head_mask.get(kind)
        if m is None:
            return [None] * n
        if tuple(m.shape) != (n, self.cfg.h):
            raise ValueError(f"head_mask[{kind!r}] has shape {tuple(m.shape)}; this model needs ({n}, {self.cfg.h}): "
                             f"one row per layer, one column per head.")
        return list(m)
