"""A decoder-only Transformer language model: the paper's decoder without the encoder and its cross-attention (GPT,
Radford et al. 2018), with the options of the families researchers study (GPT-2, Llama, Qwen2, GPT-NeoX / Pythia).

    model(tokens)                      -> logits (B, T, vocab): at each position, the next token's scores
    model(tokens, need_weights=True)   -> (logits, attns): attns a list over layers of (B, h, T, T) probabilities
"""
from __future__ import annotations

import torch
from torch import nn

from .decoder_only_attention import CausalSelfAttention, causal_bias
from .decoder_only_config import DecoderOnlyConfig
from .dropout import Dropout
from .family_mixins import HeadAblation
from .layers import PositionalEncoding, PositionwiseFeedForward, Residual, layer_norm, sinusoidal_table
from .rotary import RotaryEmbedding, inverse_frequencies

ACTIVATION_NAMES = {"silu": "swish"}       # our name -> layers.ACTIVATIONS' (SiLU is the paper-era "swish")


class DecoderOnlyLayer(nn.Module):
    """One decoder layer without cross-attention: masked self-attention, then the FFN (3.1), each in a residual.

    parallel_residual (GPT-NeoX): x + Attn(LN1(x)) + FFN(LN2(x)), both sublayers reading the same x.
    """

    def __init__(self, cfg: DecoderOnlyConfig):
        super().__init__()
        qkv_bias = cfg.bias if cfg.qkv_bias is None else cfg.qkv_bias
        out_bias = cfg.bias if cfg.out_bias is None else cfg.out_bias
        self.self_attn = CausalSelfAttention(cfg.d_model, cfg.h, cfg.n_kv, cfg.d_kv, qkv_bias, out_bias,
                                             cfg.attn_dropout)
        self.res_attn = Residual(cfg.d_model, cfg.dropout, cfg.norm, cfg.layer_norm_eps, cfg.rms_norm)
        self.ffn = self.res_ffn = None
        if cfg.d_ff:                         # d_ff = 0: an attention-only layer
            self.ffn = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, ACTIVATION_NAMES.get(cfg.activation,
                                                                                           cfg.activation),
                                               cfg.dropout, cfg.bias, cfg.gated_ffn)
            self.res_ffn = Residual(cfg.d_model, cfg.dropout, cfg.norm, cfg.layer_norm_eps, cfg.rms_norm)
        self.parallel = cfg.parallel_residual

    def forward(self, x, mask, rotary=None, need_weights=False, head_mask=None, cache=None, need_vectors=False):
        def attend(y):
            return self.self_attn(y, mask, rotary, need_weights, head_mask, cache, need_vectors)
        if self.parallel:
            out, probs = attend(self.res_attn.norm(x))
            x = x + self.res_attn.dropout(out) + (0 if self.ffn is None else
                                                  self.res_ffn.dropout(self.ffn(self.res_ffn.norm(x))))
            return x, probs
        x, probs = self.res_attn(x, attend)
        if self.ffn is not None:
            x, _ = self.res_ffn(x, lambda y: (self.ffn(y), None))
        return x, probs


class DecoderOnly(HeadAblation, nn.Module):
    """Token embedding (+ positions), N decoder layers, a final norm and the projection onto the vocabulary (3.4)."""

    head_name = "query head"

    def __init__(self, cfg: DecoderOnlyConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = (PositionalEncoding(cfg.d_model, cfg.max_len, cfg.positions)
                    if cfg.positions in ("learned", "sinusoidal") else None)
        self.rotary = (RotaryEmbedding(cfg.rotary_dim or cfg.d_k, cfg.rope_base, cfg.rope_scaling)
                       if cfg.positions == "rotary" else None)
        self.dropout = Dropout(cfg.dropout)
        self.layers = nn.ModuleList(DecoderOnlyLayer(cfg) for _ in range(cfg.N))
        # pre-norm stacks end with a norm (GPT-2's ln_f); post-norm ones already end normalised
        self.norm = layer_norm(cfg.d_model, cfg.layer_norm_eps, cfg.rms_norm) if cfg.norm == "pre" else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_output:
            self.generator.weight = self.tok_embed.weight
        self._init_weights()

    @classmethod
    def for_weights(cls, cfg: DecoderOnlyConfig) -> DecoderOnly:
        """The model with its parameters allocated on the CPU but not initialised, to be filled from a checkpoint
        at once (every parameter: the loader checks): a 1B model's random initialisation alone takes 20 s on two
        CPU cores. Its fixed tables (rotary frequencies, sinusoids) are computed as in __init__."""
        with torch.device("meta"):
            model = cls(cfg)
        model.to_empty(device="cpu")                  # one new tensor per module: the tie is made again
        if cfg.tie_output:
            model.generator.weight = model.tok_embed.weight
        if model.rotary is not None:
            model.rotary.inv_freq = inverse_frequencies(model.rotary.rotary_dim, cfg.rope_base, cfg.rope_scaling)
        if cfg.positions == "sinusoidal":
            model.pos.table = sinusoidal_table(cfg.max_len, cfg.d_model)
        return model

    @torch.no_grad()
    def _init_weights(self):
        """GPT-2's initialisation: N(0, 0.02) matrices and embeddings, zero biases, unit norms."""
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def kv_groups(self) -> list[list[int]]:
        """The query heads that share one key/value head, per group (every layer alike): [[0], [1], ...] with as
        many key/value heads as query heads, [[0, 1, 2], [3, 4, 5]] for 6 query heads over 2 (grouped-query)."""
        return self.layers[0].self_attn.kv_groups()

    def attention_modules(self) -> dict:
        """{"self": [...]}: the CausalSelfAttention of each layer."""
        return {"self": [layer.self_attn for layer in self.layers]}

    def embed(self, tokens, start: int = 0):
        """(B, T) ids -> (B, T, d_model): token embeddings, plus learned or sinusoidal positions from `start`."""
        x = self.tok_embed(tokens)
        return self.dropout(x if self.pos is None else self.pos(x, start))

    def hidden(self, tokens, need_weights=False, head_mask=None, cache=None, need_vectors=False):
        """(B, T) ids -> (the final norm's output (B, T, d_model), attentions or None per layer).

        cache: None, or a list of one dict per layer holding the earlier positions' keys and values (generation:
        tokens then holds only the new positions). Batches of texts of several lengths: pad on the right; causal
        attention never lets a real token see the padding after it.
        """
        start = 0 if not cache or "k" not in cache[0] else cache[0]["k"].size(2)
        T = tokens.size(1)
        if start + T > self.cfg.max_len:
            raise ValueError(f"{start + T} tokens are more than this model's {self.cfg.max_len} positions (max_len)")
        x = self.embed(tokens, start)
        mask = causal_bias(T, start + T, x.device) if T > 1 else None      # one (T, Tk) for every layer
        rotary = None if self.rotary is None else self.rotary.angles(T, start)
        attns = []
        for i, (layer, m) in enumerate(zip(self.layers, self._layer_masks(head_mask))):
            x, probs = layer(x, mask, rotary, need_weights, m, None if cache is None else cache[i], need_vectors)
            attns.append(probs)
        return self.norm(x), attns

    def forward(self, tokens, need_weights: bool = False, head_mask=None, cache=None, need_vectors: bool = False):
        """tokens (B, T) -> logits (B, T, vocab); with need_weights (logits, attns), attns a list over layers of
        (B, h, T, T) probabilities, one map per query head (rows: queries; every row sums to 1).

        head_mask: None, or an (N, h) float tensor (ablate_heads): each query head's output times its factor, in
        this call only. need_vectors: each layer's entry is (probs, q, k) (CausalSelfAttention).
        """
        hidden, attns = self.hidden(tokens, need_weights, head_mask, cache, need_vectors)
        logits = self.generator(hidden)
        return (logits, attns) if need_weights or need_vectors else logits
