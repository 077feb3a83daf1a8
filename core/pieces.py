"""Pieces as people read them: which word each piece belongs to, byte-fallback pieces as characters, punctuation,
and attention merged from pieces into words. Every tokenizer's pieces (core.tokenizer, core.tokenizer_json,
core.tokenizer_moses) mark a word's first piece with SentencePiece's "▁", so these work on all of them.

Merged (word-level) attention: a word's pieces are contiguous. The attention *to* a word is the
sum over its pieces (the probability mass it receives, so rows still sum to 1); the attention
*from* a word is the mean over its pieces' rows (each piece is one query). See merge_attention.
"""
from __future__ import annotations

import unicodedata

import numpy as np

WORD_START = "\u2581"   # SentencePiece's "▁" marks a piece that begins a word


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
