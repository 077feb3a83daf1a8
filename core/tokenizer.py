"""A thin wrapper around SentencePiece: ids for the model, pieces for display.

Every tokenizer of a checkpoint has the methods of Tokenizer: encode / encode_many (text -> ids), pieces (ids ->
pieces as shown, a word's first piece marked with ▁), decode (ids -> text), len() (the ids the model writes) and
save(folder). Tokenizer.from_folder reads any of them: ours and Marian's, M2M100's and T5's (SentencePiece, here),
NLLB's tokenizer.json (core.tokenizer_json) and FSMT's Moses + BPE (core.tokenizer_moses). How pieces are read as
words (word_ids, merge_words, merge_attention, ...) lives in core.pieces, shared by the tokenizer modules; its
names are also importable from here.
"""
from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import sentencepiece as spm

from core.pieces import (WORD_START, bare_word, display_pieces, is_punctuation, merge_attention, merge_words,
                         piece_byte, strip_punctuation, word_ids)

__all__ = ["Tokenizer", "clean_text", "WORD_START", "bare_word", "display_pieces", "is_punctuation",
           "merge_attention", "merge_words", "piece_byte", "strip_punctuation", "word_ids"]


def clean_text(text: str) -> str:
    """NFKC-normalise, turn control characters into spaces, collapse whitespace."""
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    text = unicodedata.normalize("NFKC", text)
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\u200d" else c
                   for c in text)
    return " ".join(text.split())


class Tokenizer:
    """Source and target SentencePiece models over one vocabulary of ids.

    Our checkpoints use one shared model (`spm.model`). Imported Marian and M2M100 checkpoints have two
    (`source.spm`, `target.spm`; M2M100's are one model twice) and a `vocab.json` mapping pieces to ids; its
    pieces that no SentencePiece model knows (</s>, <pad>, M2M100's language tokens) are left out of decoded text.
    """

    def __init__(self, src_proto: bytes, tgt_proto: bytes | None = None, vocab: dict | None = None):
        self.src = spm.SentencePieceProcessor(model_proto=src_proto)
        self.tgt = spm.SentencePieceProcessor(model_proto=tgt_proto) if tgt_proto else self.src
        self.vocab = vocab                                    # piece -> id, or None: SentencePiece's ids
        self.id_to_piece = ({i: p for p, i in vocab.items()} if vocab else None)
        self.specials = {p for p in vocab or () if p != "<unk>" and not (self._knows(self.src, p)
                                                                         or self._knows(self.tgt, p))}

    @staticmethod
    def _knows(proc, piece: str) -> bool:
        """Whether a SentencePiece model has this piece as text (not as its unknown or a control symbol)."""
        i = proc.piece_to_id(piece)
        return not (proc.is_unknown(i) or proc.is_control(i))

    @classmethod
    def from_folder(cls, folder):
        """The tokenizer of a checkpoint folder, whichever kind it is (see the module's docstring)."""
        folder = Path(folder)
        if (folder / "spm.model").exists():
            return cls((folder / "spm.model").read_bytes())
        if (folder / "source.spm").exists():
            vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
            return cls((folder / "source.spm").read_bytes(), (folder / "target.spm").read_bytes(), vocab)
        if (folder / "tokenizer.json").exists():
            from core.tokenizer_json import JsonTokenizer       # here: it imports this module
            return JsonTokenizer.from_folder(folder)
        if (folder / "merges.txt").exists():
            from core.tokenizer_moses import MosesBPETokenizer
            return MosesBPETokenizer.from_folder(folder)
        raise FileNotFoundError(f"no tokenizer in {folder}: no SentencePiece model (spm.model, or source.spm + "
                                "target.spm), no tokenizer.json, no merges.txt")

    def save(self, folder) -> None:
        from core.checkpoint.atomic import atomic_write     # here: core.checkpoint imports this module
        folder = Path(folder)
        if self.vocab is None:
            atomic_write(folder / "spm.model", self.src.serialized_model_proto())
        else:
            atomic_write(folder / "source.spm", self.src.serialized_model_proto())
            atomic_write(folder / "target.spm", self.tgt.serialized_model_proto())
            atomic_write(folder / "vocab.json", json.dumps(self.vocab, ensure_ascii=False))

    def __len__(self) -> int:
        return len(self.vocab) if self.vocab else self.src.get_piece_size()

    def _proc(self, side):
        return self.src if side == "src" else self.tgt

    def encode(self, text: str, side: str = "src") -> list[int]:
        """Text -> ids (no <s> or </s>)."""
        return self.encode_many([text], side)[0]

    def encode_many(self, lines: list[str], side: str = "src", dropout: float = 0.0) -> list[list[int]]:
        """Many lines -> ids, in one thread (so a seeded BPE-dropout segmentation repeats exactly).

        dropout > 0 is BPE-dropout (Provilkov et al. 2020): each merge is skipped with that probability,
        so the same sentence is cut into other, smaller pieces each time. Seed it with
        sentencepiece.set_random_generator_seed.
        """
        proc = self._proc(side)
        sample = dict(enable_sampling=True, alpha=dropout) if dropout > 0 else {}
        if self.vocab is None:
            return proc.encode(lines, out_type=int, num_threads=1, **sample)
        unk = self.vocab.get("<unk>", 1)
        return [[self.vocab.get(p, unk) for p in line]
                for line in proc.encode(lines, out_type=str, num_threads=1, **sample)]

    def pieces(self, ids, side: str = "src") -> list[str]:
        """Ids -> the pieces as shown to users."""
        if self.vocab is None:
            return [self.src.id_to_piece(int(i)) for i in ids]
        return [self.id_to_piece.get(int(i), "<unk>") for i in ids]

    def decode(self, ids, side: str = "tgt") -> str:
        """Ids -> detokenised text."""
        if self.vocab is None:
            return self._proc(side).decode([int(i) for i in ids])
        return self._proc(side).decode_pieces([p for p in self.pieces(ids, side) if p not in self.specials])
