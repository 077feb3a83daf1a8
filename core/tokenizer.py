"""A thin wrapper around SentencePiece: ids for the model, pieces for display, words for merged views.

Every tokenizer of a checkpoint has the methods of Tokenizer: encode / encode_many (text -> ids), pieces (ids ->
pieces as shown, a word's first piece marked with ▁), decode (ids -> text), len() (the ids the model writes) and
save(folder). Tokenizer.from_folder reads any of them: ours and Marian's and M2M100's (SentencePiece, here), NLLB's
tokenizer.json (core.tokenizer_json) and FSMT's Moses + BPE (core.tokenizer_moses).

Merged (word-level) attention: a word's pieces are contiguous. The attention *to* a word is the
sum over its pieces (the probability mass it receives, so rows still sum to 1); the attention
*from* a word is the mean over its pieces' rows (each piece is one query). See merge_attention.
"""
from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import sentencepiece as spm

WORD_START = "\u2581"   # SentencePiece's "▁" marks a piece that begins a word


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


def word_ids(pieces: list[str], specials=("<s>", "</s>", "<pad>")) -> list[int]:
    """Index of the word each piece belongs to; a special token is a word of its own."""
    ids, current = [], -1
    for i, p in enumerate(pieces):
        starts = p.startswith(WORD_START) or p in specials or i == 0 or pieces[i - 1] in specials
        current += 1 if starts else 0
        ids.append(current)
    return ids


def piece_byte(piece: str) -> int | None:
    """The byte a byte-fallback piece such as "<0xC3>" (or "<0xc3>") stands for, or None for any other piece."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">") \
            and all(c in "0123456789ABCDEFabcdef" for c in piece[3:5]):
        return int(piece[3:5], 16)
    return None


def _utf8_char(pieces: list[str]) -> str | None:
    """The one printable character that these byte-fallback pieces spell together, or None."""
    try:
        char = bytes(piece_byte(p) for p in pieces).decode("utf-8")
    except (TypeError, UnicodeDecodeError):                    # TypeError: a piece that is no byte
        return None
    return char if len(char) == 1 and char.isprintable() else None


def display_pieces(pieces: list[str]) -> list[str]:
    """Pieces as a student should read them: byte-fallback pieces become the characters they stand for.

    One label per piece, so that rows and columns of attention maps still match. "<0x39>" -> "9"; the
    bytes of a character that needs several ("<0xC3>", "<0xA4>" -> "ä") read "ä 1/2", "ä 2/2". Bytes
    that make no whole printable character keep their raw "<0x..>" name.
    """
    out, i = list(pieces), 0
    while i < len(pieces):
        if piece_byte(pieces[i]) is None:           # most pieces: no byte window to try (keeps this fast)
            i += 1
            continue
        n = next((n for n in range(1, 5) if i + n <= len(pieces) and _utf8_char(pieces[i:i + n])), 0)
        if n:
            char = _utf8_char(pieces[i:i + n])
            out[i:i + n] = [char] if n == 1 else [f"{char} {k + 1}/{n}" for k in range(n)]
        i += max(n, 1)
    return out


def is_punctuation(text: str) -> bool:
    """Whether a character, word or piece is made only of punctuation (Unicode category P: . , ; : ! ? - quotes,
    brackets), after SentencePiece's ▁ word marker. A byte-fallback piece such as "<0x2E>" counts by the ASCII
    character it stands for. The project's one test of punctuation: head scores, word matching, pronoun forms."""
    code = piece_byte(text)
    if code is not None and code < 0x80:
        text = chr(code)
    text = text.lstrip(WORD_START)
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def strip_punctuation(word: str) -> str:
    """The word without the punctuation and symbols around it ('„Its,' -> 'Its', '$5' -> '5'), to match words;
    what stands inside it stays ('U.S' of 'U.S.'), and so does SentencePiece's word marker ▁ (a symbol)."""
    def around(c: str) -> bool:
        return is_punctuation(c) or (unicodedata.category(c).startswith("S") and c != WORD_START)
    start, end = 0, len(word)
    while start < end and around(word[start]):
        start += 1
    while end > start and around(word[end - 1]):
        end -= 1
    return word[start:end]


def bare_word(word: str) -> str:
    """A word in lower case without the punctuation around it, to compare words: 'Its,' -> 'its'."""
    return strip_punctuation(word).lower()


def merge_words(pieces: list[str], ids: list[int] | None = None) -> list[str]:
    """Pieces -> words (pieces joined, the ▁ marker removed, byte-fallback pieces turned back into text)."""
    ids = word_ids(pieces) if ids is None else ids
    words = [""] * (max(ids) + 1 if ids else 0)
    pending = {}                                   # word -> bytes of byte pieces not yet decoded
    for p, w in zip(pieces, ids):
        b = piece_byte(p)
        if b is not None:
            pending[w] = pending.get(w, b"") + bytes([b])
            continue
        if w in pending:
            words[w] += pending.pop(w).decode("utf-8", "replace")
        words[w] += p
    for w, data in pending.items():
        words[w] += data.decode("utf-8", "replace")
    return [w.replace(WORD_START, "") or WORD_START for w in words]


def merge_attention(attn: np.ndarray, row_words: list[int], col_words: list[int]) -> np.ndarray:
    """Piece-level attention (..., Tq, Tk) -> word-level (..., Wq, Wk).

    Columns (attended pieces) are summed per word; rows (attending pieces) are averaged per word.
    """
    n_rows, n_cols = max(row_words) + 1, max(col_words) + 1
    col_onehot = np.zeros((len(col_words), n_cols), dtype=attn.dtype)
    col_onehot[np.arange(len(col_words)), col_words] = 1.0
    row_avg = np.zeros((n_rows, len(row_words)), dtype=attn.dtype)
    row_avg[row_words, np.arange(len(row_words))] = 1.0
    row_avg /= row_avg.sum(1, keepdims=True)
    return row_avg @ attn @ col_onehot
