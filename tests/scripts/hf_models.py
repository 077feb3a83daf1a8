"""What the importer tests share: tiny random transformers models built here (never downloaded), and the
comparison of our imported model with theirs: teacher-forced logits, every attention map, greedy output."""
from __future__ import annotations

import io

import numpy as np
import sentencepiece as spm
import torch

import core
from tests.helpers import CORPUS

SENTENCES = ["the quick brown fox jumps over the lazy dog", "two young girls are playing",
             "a man in a blue shirt is standing on a ladder and the weather is nice"]
TARGET = "der schnelle braune Fuchs springt über den faulen Hund"
TINY = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0)
LOGITS_ATOL, MAPS_ATOL = 1e-4, 1e-5          # fp32, as the project promises for imported models


class Evil:
    """Unpickling this creates a file: proof that opening a pickle runs code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (str(self.path), "w")


def english_german() -> tuple[list[str], list[str]]:
    """The test corpus split into its English and its German lines."""
    german = [s for s in CORPUS if any(w in s for w in ("der", "ein", "zwei", "das", "Grüße"))]
    return [s for s in CORPUS if s not in german], german


def train_spm(lines, vocab_size: int = 100, model_type: str = "unigram") -> bytes:
    """A tiny SentencePiece model (serialized) of these lines."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 20), model_writer=buf, vocab_size=vocab_size,
                                   model_type=model_type, hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


@torch.no_grad()
def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Large random weights (LayerNorm gains around 1): peaked attention, so that a wrong mapping shows."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if "embed_positions" in name:
            continue
        noise = torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.2)
        p.copy_(noise + (1.0 if name.endswith("norm.weight") else 0.0))
    return model.eval()


@torch.no_grad()
def differences(tm: core.TranslationModel, hf, src: str, tgt: str) -> dict:
    """Max |ours - theirs| of the teacher-forced logits and of every kind of attention map, on our ids."""
    r = tm.attend(src, tgt)
    src_ids = torch.tensor([tm.source_ids(src)])
    dec_in = torch.tensor([[tm.cfg.bos_id] + tm.target_ids(tgt)])
    # use_cache=False: transformers' FSMT leaves out the causal mask when it expects to decode step by step
    out = hf(input_ids=src_ids, decoder_input_ids=dec_in, output_attentions=True, use_cache=False)
    diff = {"logits": (tm.model(src_ids, dec_in) - out.logits).abs().max().item()}
    for kind, theirs in [("enc_self", out.encoder_attentions), ("dec_self", out.decoder_attentions),
                         ("cross", out.cross_attentions)]:
        theirs = torch.cat(theirs, 0).numpy()                  # (layers, h, rows, cols)
        ours = getattr(r, kind)
        assert ours.shape == theirs.shape, kind
        diff[kind] = float(np.abs(ours - theirs).max())
    return diff


def generate(hf, src_ids: list[int], max_length: int, eos: int, **kwargs) -> list[int]:
    """transformers' greedy output after the decoder start, cut at </s> (forced at max_length, as our limit does)."""
    with torch.no_grad():
        seq = hf.generate(torch.tensor([src_ids]), num_beams=1, do_sample=False, max_length=max_length,
                          forced_eos_token_id=eos, **kwargs)[0, 1:].tolist()
    return seq[: seq.index(eos)] if eos in seq else seq


def greedy_length(tm: core.TranslationModel, src_ids: list[int]) -> int:
    """generate's max_length that matches our greedy search's limit (source + 50, </s> and the start included)."""
    return min(len(src_ids) + 50, tm.cfg.max_len - 1) + 1
