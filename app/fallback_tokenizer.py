"""A tiny SentencePiece model trained in memory, so that the app runs before any checkpoint exists."""
from __future__ import annotations

import functools
import io

import sentencepiece as spm

from core import Tokenizer

_TEXT = [
    "It is in this spirit that a majority of American governments have passed new laws since 2009.",
    "The Law will never be perfect, but its application should be just - this is what we are missing.",
    "Das Gesetz wird niemals perfekt sein, aber seine Anwendung sollte gerecht sein.",
    "A man in a blue shirt is standing on a ladder.", "Ein Mann in einem blauen Hemd steht auf einer Leiter.",
]


@functools.lru_cache(maxsize=1)
def fallback_tokenizer() -> Tokenizer:
    """Byte-fallback BPE on a few sentences: every input still tokenises (unknown text goes to bytes)."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_TEXT * 4), model_writer=buf, vocab_size=400, model_type="bpe",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, byte_fallback=True, character_coverage=1.0,
        hard_vocab_limit=False, minloglevel=2)
    return Tokenizer(buf.getvalue())
