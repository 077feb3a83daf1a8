"""The hyper-parameters of a decoder-only language model (GPT: the paper's decoder without cross-attention)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .family_mixins import FamilyJson

ROPE_SCALINGS = ("llama3",)          # the rope_scaling types core/model/rotary.py computes


@dataclass
class DecoderOnlyConfig(FamilyJson):
    """Sizes and options of a decoder-only Transformer. Defaults are GPT-2 small's (Radford et al. 2019).

    Which family needs which option: docs/architecture.md ("Decoder-only families").
    """
    family: ClassVar[str] = "decoder-only"   # config.json's "family" (core/model/families.py)

    vocab_size: int = 50257
    N: int = 12                      # layers
    d_model: int = 768
    d_ff: int = 3072                 # 0: attention-only layers, no FFN (the toy models of induction-head studies)
    h: int = 12                      # query heads
    h_kv: int | None = None          # key/value heads (grouped-query attention: Llama 3, SmolLM2, Qwen2); None: h
    d_kv: int | None = None          # each head's width when it is not d_model / h (Qwen2.5-0.5B's 64 of 896 / 14)
    max_len: int = 1024              # longest sequence: the learned table's rows, or the checkpoint's context
    positions: str = "learned"       # "learned" (GPT-2), "rotary" (Llama, Qwen2, NeoX), "sinusoidal" (3.5) or "none"
    rope_base: float = 10000.0       # rotary: theta of the frequencies base^(-2i/rotary_dim)
    rotary_dim: int | None = None    # rotary: how many of each head's dimensions rotate (NeoX: a quarter); None: d_k
    rope_scaling: dict | None = None  # rotary: {"rope_type": "llama3", "factor", ...} (Llama 3.1/3.2), else None
    norm: str = "pre"                # "pre": x + Sublayer(LayerNorm(x)), a final norm after the stack; or "post"
    rms_norm: bool = False           # RMSNorm in place of LayerNorm (Llama, Qwen2)
    layer_norm_eps: float = 1e-5
    activation: str = "gelu_tanh"    # "gelu_tanh" (GPT-2's gelu_new), "gelu" (NeoX), "silu" (Llama), "relu"
    gated_ffn: bool = False          # FFN(x) = (act(x W1) * x W3) W2: SwiGLU with silu (Llama, Qwen2)
    bias: bool = True                # biases in the FFN (and W^O, W^Q, W^K, W^V unless said otherwise below)
    qkv_bias: bool | None = None     # biases in W^Q, W^K, W^V; None: as `bias` (Qwen2: True with bias False)
    out_bias: bool | None = None     # a bias in W^O; None: as `bias` (a Llama with attention_bias but no mlp_bias)
    parallel_residual: bool = False  # x + Attn(LN1(x)) + FFN(LN2(x)) in one step (GPT-NeoX, Pythia)
    tie_output: bool = True          # the output projection is the token embedding (GPT-2, SmolLM2, Qwen2.5-0.5B)
    dropout: float = 0.0             # on embeddings and on each sublayer's output
    attn_dropout: float | None = None  # on the attention probabilities; None: dropout
    pad_id: int | None = None        # GPT-2 has no padding token: right-padding needs none (causal attention)
    bos_id: int | None = None        # put before a text when the family does (Llama's <|begin_of_text|>)
    eos_id: int | None = None

    @property
    def d_k(self) -> int:
        return self.d_kv or self.d_model // self.h

    @property
    def n_kv(self) -> int:
        """The number of key/value heads (h without grouped-query attention)."""
        return self.h if self.h_kv is None else self.h_kv

    def __post_init__(self):
        if self.attn_dropout is None:
            self.attn_dropout = self.dropout
        if self.d_kv is None and self.d_model % self.h:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h}), or d_kv given")
        if self.h % self.n_kv:
            raise ValueError(f"h ({self.h}) query heads cannot share {self.n_kv} key/value heads in equal groups")
        if self.d_ff < 0 or self.N < 1 or self.max_len < 1:
            raise ValueError(f"N ({self.N}) and max_len ({self.max_len}) must be >= 1 and d_ff ({self.d_ff}) >= 0")
        for name, allowed in [("positions", {"learned", "rotary", "sinusoidal", "none"}), ("norm", {"pre", "post"}),
                              ("activation", {"relu", "gelu", "gelu_tanh", "silu"})]:
            if getattr(self, name) not in allowed:
                raise ValueError(f"config.{name} must be one of {sorted(allowed)}, not {getattr(self, name)!r}")
        if self.positions == "rotary":
            if self.rotary_dim is not None and not (0 < self.rotary_dim <= self.d_k and self.rotary_dim % 2 == 0):
                raise ValueError(f"rotary_dim ({self.rotary_dim}) must be even and in 2..d_k ({self.d_k})")
            kind = (self.rope_scaling or {}).get("rope_type", "default")
            if kind not in ("default", *ROPE_SCALINGS):
                raise ValueError(f"rope_scaling type {kind!r} is not built; only {', '.join(ROPE_SCALINGS)}")
        if self.parallel_residual and self.norm != "pre":
            raise ValueError("parallel_residual needs norm='pre' (GPT-NeoX's layers are pre-norm)")
