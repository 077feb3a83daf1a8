"""The paper's encoder alone, with learned positions and token types (BERT, Devlin et al. 2019; RoBERTa; DistilBERT).

BERT's layer is the paper's post-norm encoder layer with GELU: core.model.layers.EncoderLayer, built from a
TransformerConfig (layer_config). What BERT adds is at both ends: embeddings of word + position + token type
(sentence A or B) with a LayerNorm, and the masked-LM head that answers "which word fills [MASK]?".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from .config import TransformerConfig
from .dropout import Dropout
from .family_mixins import FamilyJson, HeadAblation
from .layers import ACTIVATIONS, EncoderLayer
from .transformer import padding_mask


@dataclass
class EncoderOnlyConfig(FamilyJson):
    """Sizes and options of an encoder-only Transformer. Defaults are BERT-base's (uncased vocabulary).

    Which family needs which option: docs/architecture.md. The special ids are the vocabulary's: BERT's [CLS]
    [SEP] [MASK] [PAD]; RoBERTa's <s> </s> <mask> <pad>.
    """
    family: ClassVar[str] = "encoder-only"   # config.json's "family" (core/model/families.py)

    vocab_size: int = 30522
    N: int = 12                      # layers
    d_model: int = 768
    d_ff: int = 3072
    h: int = 12
    dropout: float = 0.1             # on embeddings and on each sublayer's output
    attn_dropout: float | None = None  # on the attention probabilities; None: dropout
    max_len: int = 512               # longest sequence (special tokens included)
    type_vocab_size: int = 2         # token types (BERT: sentence A / B); RoBERTa has 1; 0: none (DistilBERT)
    pos_offset: int = 0              # > 0: RoBERTa's numbering, real tokens from this row on, padding at the row
    #                                  before it (fairseq's, pad_id + 1); 0: row t for position t (BERT)
    layer_norm_eps: float = 1e-12
    activation: str = "gelu"         # in each FFN: "gelu" (BERT, RoBERTa, DistilBERT), "gelu_tanh" or "relu"
    head_activation: str | None = None   # in the masked-LM head; None: activation (RoBERTa's is always GELU)
    mlm_head: bool = True            # False: the checkpoint has no masked-LM head; only its attention can be shown
    tie_output: bool = True          # the head's output matrix is the word embedding (all three families)
    pad_id: int = 0
    unk_id: int = 100
    cls_id: int = 101                # first of every input: [CLS] (RoBERTa: <s>)
    sep_id: int = 102                # after each segment: [SEP] (RoBERTa: </s>)
    mask_id: int = 103               # [MASK] (RoBERTa: <mask>)
    pair_seps: int = 1               # [SEP]s between two segments: BERT 1, RoBERTa 2 (</s></s>)

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    def __post_init__(self):
        if self.attn_dropout is None:
            self.attn_dropout = self.dropout
        if self.head_activation is None:
            self.head_activation = self.activation
        if self.d_model % self.h:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.N < 1 or self.max_len < 1 or self.type_vocab_size < 0 or self.pos_offset < 0:
            raise ValueError(f"N ({self.N}) and max_len ({self.max_len}) must be >= 1, type_vocab_size "
                             f"({self.type_vocab_size}) and pos_offset ({self.pos_offset}) >= 0")
        for name in ("activation", "head_activation"):
            if getattr(self, name) not in ("gelu", "gelu_tanh", "relu"):
                raise ValueError(f"config.{name} must be one of ['gelu', 'gelu_tanh', 'relu'], "
                                 f"not {getattr(self, name)!r}")
        for name in ("pad_id", "unk_id", "cls_id", "sep_id", "mask_id"):
            if not 0 <= getattr(self, name) < self.vocab_size:
                raise ValueError(f"config.{name} ({getattr(self, name)}) is not an id of the {self.vocab_size} "
                                 "of the vocabulary")

    def layer_config(self) -> TransformerConfig:
        """The paper's config of one encoder layer as BERT has it: post-norm, GELU, no dropout inside the FFN."""
        return TransformerConfig(vocab_size=self.vocab_size, N=self.N, d_model=self.d_model, d_ff=self.d_ff,
                                 h=self.h, dropout=self.dropout, attn_dropout=self.attn_dropout, ffn_dropout=0.0,
                                 max_len=self.max_len, positions="learned", norm="post", activation=self.activation,
                                 layer_norm_eps=self.layer_norm_eps, pad_id=self.pad_id)


def special_sequence(cfg: EncoderOnlyConfig, first: list[int], second: list[int] | None = None):
    """The input the family was trained on, and its token types: [CLS] A [SEP] (B [SEP]) for BERT, <s> A </s>
    (</s> B </s>) for RoBERTa. Types: 0 over A, 1 over B (with one type or none: all 0). Returns (ids, types)."""
    ids = [cfg.cls_id, *first, cfg.sep_id]
    types = [0] * len(ids)
    if second is not None:
        tail = [cfg.sep_id] * (cfg.pair_seps - 1) + [*second, cfg.sep_id]
        ids += tail
        types += [1 if cfg.type_vocab_size > 1 else 0] * len(tail)
    return ids, types


class Embeddings(nn.Module):
    """BERT's input: word + token type + learned position embeddings, then LayerNorm and dropout."""

    def __init__(self, cfg: EncoderOnlyConfig):
        super().__init__()
        self.cfg = cfg
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position = nn.Embedding(cfg.max_len + cfg.pos_offset, cfg.d_model)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.d_model) if cfg.type_vocab_size else None
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.dropout)

    def positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T) rows of the position table: t (BERT), or RoBERTa's count of real tokens so far."""
        B, T = tokens.shape
        if T > self.cfg.max_len:
            raise ValueError(f"a text of {T} tokens is longer than this model reads ({self.cfg.max_len} tokens, "
                             "[CLS] and [SEP] included): shorten it")
        if not self.cfg.pos_offset:
            return torch.arange(T, device=tokens.device).expand(B, T)
        real = (tokens != self.cfg.pad_id).long()
        return real.cumsum(1) * real + (self.cfg.pos_offset - 1)       # padding: the row before the first

    def forward(self, tokens, token_types=None):  # tokens: (B, T)
        x = self.word(tokens)                                            # (B, T, d_model)
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(tokens) if token_types is None else token_types)
        x = x + self.position(self.positions(tokens))
        return self.dropout(self.norm(x))


class MaskedLMHead(nn.Module):
    """BERT's masked-LM head: dense, activation, LayerNorm, then the word embedding's transpose plus a bias."""

    def __init__(self, cfg: EncoderOnlyConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.act = ACTIVATIONS[cfg.head_activation]
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.decoder = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, hidden):  # (B, T, d_model) -> (B, T, vocab)
        return self.decoder(self.norm(self.act(self.dense(hidden)))) + self.bias


class EncoderOnly(HeadAblation, nn.Module):
    """The paper's encoder alone, with learned positions and token types (BERT), and its masked-LM head."""

    def __init__(self, cfg: EncoderOnlyConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = Embeddings(cfg)
        layer_cfg = cfg.layer_config()
        self.encoder = nn.ModuleList(EncoderLayer(layer_cfg) for _ in range(cfg.N))
        self.head = MaskedLMHead(cfg) if cfg.mlm_head else None
        if self.head is not None and cfg.tie_output:
            self.head.decoder.weight = self.embed.word.weight        # 3.4's tying, as BERT has it
        self._init_weights()

    def _init_weights(self):
        for name, p in self.named_parameters():      # BERT's: N(0, 0.02) matrices, zero biases, unit LayerNorms
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("norm.weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def hidden(self, tokens, need_weights=False, head_mask=None, token_types=None, need_vectors=False):
        """tokens (B, T) ids -> (the last layer's output (B, T, d_model), attentions or None per layer). Padding
        (pad_id) is masked as a key: each text of a batch gets the maps it has alone (its own rows and columns)."""
        mask = padding_mask(tokens, self.cfg.pad_id)                     # (B, 1, 1, T)
        if token_types is not None and self.embed.token_type is None:
            raise ValueError("This model has no token types (DistilBERT): leave token_types out.")
        x, attns = self.embed(tokens, token_types), []
        for layer, m in zip(self.encoder, self._layer_masks(head_mask)):
            x, probs = layer(x, mask, need_weights, head_mask=m, need_vectors=need_vectors)
            attns.append(probs)
        return x, attns

    def forward(self, tokens, need_weights: bool = False, head_mask=None, token_types=None,
                need_vectors: bool = False):
        """tokens (B, T) -> the masked-LM logits (B, T, vocab); with need_weights (logits, attns), attns a list over
        layers of (B, h, T, T) probabilities (rows: queries; every row sums to 1, 0 on padding columns).

        head_mask: None, or an (N, h) float tensor (ablate_heads): each head's output times its factor, in this call
        only. token_types: None (all 0: one sentence) or (B, T) ids of sentence A / B (special_sequence).
        need_vectors: each layer's entry is (probs, q, k) (MultiHeadAttention). A checkpoint without the masked-LM
        head has no logits: hidden() gives its attention.
        """
        if self.head is None:
            raise ValueError("This model has no masked-LM head (its checkpoint was saved without one, as BertModel "
                             "is): its attention maps can be shown, but not which word fills [MASK].")
        hidden, attns = self.hidden(tokens, need_weights, head_mask, token_types, need_vectors)
        logits = self.head(hidden)
        return (logits, attns) if need_weights or need_vectors else logits

    def attention_modules(self) -> dict:
        """{"self": [...]}: the MultiHeadAttention of each layer (the encoder's self-attention)."""
        return {"self": [layer.self_attn for layer in self.encoder]}
