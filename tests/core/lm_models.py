"""Tiny random language models for the core tests of writing and contrast: a DecoderOnly with random weights
(larger than GPT-2's init, so that the probabilities are peaked and differ from token to token) and a word-level
tokenizer of its ids, wrapped as load_checkpoint wraps a decoder-only checkpoint. Built here, never downloaded."""
from __future__ import annotations

import torch
from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers

from core.language_model import LanguageModel
from core.model.decoder_only import DecoderOnly
from core.model.decoder_only_config import DecoderOnlyConfig
from core.tokenizer_json import JsonTokenizer

WORDS = ["<bos>", "<eos>"] + [f"w{i}" for i in range(30)]
VARIANTS = {     # GPT-2 (learned positions, LayerNorm) and Llama (its first token, rotary, RMSNorm, grouped K/V)
    "gpt2": dict(),
    "llama": dict(positions="rotary", h_kv=2, rms_norm=True, gated_ffn=True, activation="silu", bias=False,
                  bos_id=0),
}


def tiny_lm(variant: str = "gpt2", seed: int = 0, max_len: int = 32, eos_id: int | None = 1,
            scale: float = 0.3) -> LanguageModel:
    """A 2-layer, 4-head random language model over WORDS (text: words split by spaces)."""
    torch.manual_seed(seed)
    cfg = DecoderOnlyConfig(**{**dict(vocab_size=len(WORDS), N=2, d_model=32, d_ff=64, h=4, max_len=max_len,
                                      eos_id=eos_id), **VARIANTS[variant]})
    model = DecoderOnly(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, scale)
    tok = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<eos>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return LanguageModel(model, JsonTokenizer(tok.to_str(), len(WORDS)), {"name": f"tiny-{variant}"})
