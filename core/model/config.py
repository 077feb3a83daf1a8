"""The model's hyper-parameters as one dataclass, with the paper's Table 3 presets."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, asdict


@dataclass
class TransformerConfig:
    """Sizes and options of the encoder-decoder Transformer (Vaswani et al. 2017, Table 3).

    Defaults are the paper's; every non-paper option (pre-norm, learned positions, the variations
    of imported Marian, NLLB/M2M100, mBART, FSMT and T5 models) is off unless asked for.
    """
    vocab_size: int = 8000
    N: int = 6                       # encoder layers
    N_dec: int | None = None         # decoder layers; None (as older config.json files say) becomes N
    d_model: int = 512
    d_ff: int = 2048
    h: int = 8
    dropout: float = 0.1             # P_drop (5.4): on each sublayer's output and on embeddings + positions
    # Two more dropouts of tensor2tensor, not in the paper: on the attention probabilities and inside the FFN
    # (after the ReLU). None, as older config.json files say, means `dropout` (how our checkpoints were trained);
    # 0 is the paper's, and makes a CPU training step cheaper (no masks on the FFN's 4x wider activations).
    attn_dropout: float | None = None
    ffn_dropout: float | None = None
    max_len: int = 512               # longest sequence the position table covers
    positions: str = "sinusoidal"    # or "learned" (Table 3, row E), or "relative": none added to the embeddings,
    #                                  a learned bias per head and distance bucket on the attention scores (T5)
    pe_layout: str = "interleaved"   # sin/cos interleaved (paper) or "concat" (all sines, then cosines: Marian)
    #                                  or "fairseq" (concat, frequencies 10000^(-i/(d_model/2 - 1)): NLLB, FSMT)
    pos_offset: int = 0              # the table row of the first position (fairseq models: pad_id + 1)
    norm: str = "post"               # "post": LayerNorm(x + Sublayer(x)) as in the paper; or "pre"
    activation: str = "relu"         # "relu" (paper), "swish" (Marian), "gelu" (mBART) or "gelu_tanh" (T5 v1.1)
    layer_norm_eps: float = 1e-5
    share_embeddings: bool = True    # one embedding for source, target and pre-softmax projection
    scale_embeddings: bool = True    # multiply embeddings by sqrt(d_model)
    final_logits_bias: bool = False  # Marian adds a bias after the output projection
    embed_norm: bool = False         # a LayerNorm on embeddings + positions, before the stacks (mBART)
    forbid_pad_output: bool = False  # Marian's generate never emits <pad> (its decoder start token)
    src_vocab_size: int | None = None   # a source vocabulary of its own size (FSMT); None: vocab_size, one for both
    src_prefix_id: int | None = None    # a token before every source sentence (NLLB, M2M100: the source language)
    tgt_prefix_id: int | None = None    # the first target token, forced in decoding (NLLB, M2M100: target language)
    src_prompt_ids: list | None = None  # ids before every source sentence: T5's task prompt ("translate ... to ...:")
    # T5 (Raffel et al. 2020) and its descendants (T5 v1.1, mT5, Flan-T5): core/model/position_bias.py
    rel_buckets: int = 32            # positions="relative": buckets of key - query distance, half exact, half log
    rel_max_distance: int = 128      # distances from here on share the last bucket
    scale_scores: bool = True        # softmax(QK^T / sqrt(d_k)) (3.2.1); T5 leaves out the 1/sqrt(d_k)
    rms_norm: bool = False           # RMSNorm (no mean subtracted, no bias: T5) in place of LayerNorm
    bias: bool = True                # biases in the attention and FFN linear layers (T5 has none)
    gated_ffn: bool = False          # FFN(x) = (act(x W1) * x W3) W2: T5 v1.1's gated GELU
    tie_output: bool = True          # with share_embeddings, the pre-softmax projection is that matrix too (3.4)
    scale_output: bool = False       # the decoder's output times d_model^-0.5 before the projection (tied T5)
    d_kv: int | None = None          # each head's width when it is not d_model / h (T5 v1.1 small: 6 heads of 64)
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2                  # first decoder input ("decoder start")
    eos_id: int = 3
    label_smoothing: float = 0.1

    @property
    def d_k(self) -> int:
        return self.d_kv or self.d_model // self.h

    @property
    def source_vocab_size(self) -> int:
        """The number of source ids: vocab_size unless the source has a vocabulary of its own."""
        return self.vocab_size if self.src_vocab_size is None else self.src_vocab_size

    def __post_init__(self):
        if self.N_dec is None:           # one name for the decoder depth: always an int after construction
            self.N_dec = self.N
        if self.attn_dropout is None:
            self.attn_dropout = self.dropout
        if self.ffn_dropout is None:
            self.ffn_dropout = self.dropout
        if self.d_kv is None and self.d_model % self.h:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by h ({self.h})")
        if self.share_embeddings and self.source_vocab_size != self.vocab_size:
            raise ValueError(f"a source vocabulary of {self.source_vocab_size} ids and a target one of "
                             f"{self.vocab_size} cannot share one embedding (share_embeddings=False)")
        if self.pos_offset < 0:
            raise ValueError(f"pos_offset must be >= 0, not {self.pos_offset}")
        for name, allowed in [("positions", {"sinusoidal", "learned", "relative"}),
                              ("pe_layout", {"interleaved", "concat", "fairseq"}),
                              ("norm", {"post", "pre"}),
                              ("activation", {"relu", "swish", "gelu", "gelu_tanh"})]:
            if getattr(self, name) not in allowed:
                raise ValueError(f"config.{name} must be one of {sorted(allowed)}, not {getattr(self, name)!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_dict(cls, d: dict) -> TransformerConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {unknown}")
        return cls(**d)


PRESETS = {
    # Table 3, "base" and "big".
    "base": dict(N=6, d_model=512, d_ff=2048, h=8, dropout=0.1),
    "big": dict(N=6, d_model=1024, d_ff=4096, h=16, dropout=0.3),
    # Trains on 2 CPU cores, yet keeps N=6 and h=8 so "layer 5 of 6" means what it means in the paper.
    # A 3-layer decoder trains ~35% faster; deep-encoder/shallow-decoder models lose little BLEU (Kasai et al. 2021).
    "small": dict(N=6, N_dec=3, d_model=256, d_ff=1024, h=8, dropout=0.1),
    # For tests only.
    "tiny": dict(N=2, d_model=32, d_ff=64, h=4, dropout=0.0, max_len=128),
}


def preset(name: str, **overrides) -> TransformerConfig:
    """A config from a preset name plus keyword overrides, e.g. preset("small", vocab_size=8000)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return TransformerConfig(**{**PRESETS[name], **overrides})
