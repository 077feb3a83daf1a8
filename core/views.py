"""One attention map as a person sees it: the kinds, the tokens that label its rows and columns, words or pieces.

The one convention of the project, used by every page, figure, score and export:
- A map is (..., rows, cols): rows are queries (who attends), columns keys (who is attended); every row
  of a model's map sums to 1.
- Encoder self-attention: rows and columns are the source pieces + "</s>".
- Decoder maps: each row is one decoding step, labelled by the piece that step WRITES (out_tokens: the
  target pieces + "</s>"). The step reads the start token and the pieces written before it, so the
  columns of decoder self-attention are labelled by what was READ (tgt_tokens: "<s>" + target pieces);
  the columns of cross-attention are the source pieces + "</s>".
- Positions count from 1 wherever a person sees them (`position`); layers and heads likewise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tokenizer import merge_attention, merge_words, word_ids

KINDS = {"enc_self": "Encoder self-attention", "dec_self": "Decoder self-attention",
         "cross": "Encoder-decoder attention"}
SHORT = {"enc_self": "Encoder self", "dec_self": "Decoder self", "cross": "Encoder-decoder"}
SPECIALS = ("<s>", "</s>", "<pad>")
# kind -> (tokens that label the rows, tokens that label the columns), as fields of an AttendResult
SIDES = {"enc_self": ("src_tokens", "src_tokens"), "dec_self": ("out_tokens", "tgt_tokens"),
         "cross": ("out_tokens", "src_tokens")}
DECODER_ROWS = ("Decoder rows are decoding steps, each labelled by the word it writes; it reads the start "
                "token <s> and the words written before it.")


def check_kind(kind: str) -> str:
    """kind itself, or a ValueError that names the kinds there are."""
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {list(KINDS)}")
    return kind


def position(i: int) -> int:
    """The position a person reads for index i (0-based in code, 1-based on screen)."""
    return int(i) + 1


def side_tokens(result, kind: str) -> tuple[list, list]:
    """(row tokens, column tokens) of one kind of map of an AttendResult or of a dict with the same
    fields (src_tokens, tgt_tokens, out_tokens), such as a training snapshot's probe."""
    get = result.get if isinstance(result, dict) else lambda name: getattr(result, name)
    rows, cols = SIDES[check_kind(kind)]
    return list(get(rows)), list(get(cols))


@dataclass
class AttentionView:
    """One kind of attention ready to show: maps (layers, heads, R, C) with the labels of its rows and columns.

    level: "pieces" or "words". row_sums_to_one: False when dropped special columns took weight away.
    """
    kind: str
    maps: np.ndarray
    rows: list
    cols: list
    level: str = "pieces"
    row_sums_to_one: bool = True


def to_words(maps: np.ndarray, rows: list, cols: list) -> tuple[np.ndarray, list, list]:
    """Piece-level maps and labels -> word-level (attention to a word: summed; from a word: averaged)."""
    rid, cid = word_ids(rows), word_ids(cols)
    return merge_attention(maps, rid, cid), merge_words(rows, rid), merge_words(cols, cid)


def attention_view(result, kind: str, words: bool = False, specials: bool = True, maps=None) -> AttentionView:
    """One kind of map of an AttendResult (or snapshot probe, with `maps` given) labelled by the convention
    above; words: pieces merged into words; specials=False: <s>, </s>, <pad> rows and columns dropped.

    Dropped specials are not renormalised: a head that parks its attention on </s> then shows faint rows,
    which is the truth about it.
    """
    rows, cols = side_tokens(result, kind)
    maps = getattr(result, kind) if maps is None else maps
    if maps is None:                     # attend_batch(..., encoder_only=True) ran no decoder
        raise ValueError(f"This result has no {KINDS[kind].lower()}: only the encoder was run for it.")
    maps = np.asarray(maps, dtype=np.float32)
    if maps.shape[-2:] != (len(rows), len(cols)):
        raise ValueError(f"{kind} maps are {maps.shape[-2]}x{maps.shape[-1]} but there are "
                         f"{len(rows)} row and {len(cols)} column tokens")
    if words:
        maps, rows, cols = to_words(maps, rows, cols)
    sums_to_one = True
    if not specials:
        keep_r = [i for i, t in enumerate(rows) if t not in SPECIALS]
        keep_c = [j for j, t in enumerate(cols) if t not in SPECIALS]
        if keep_r and keep_c:              # a translation of nothing but </s> keeps its specials
            sums_to_one = len(keep_c) == len(cols)
            maps = maps[..., keep_r, :][..., keep_c]
            rows, cols = [rows[i] for i in keep_r], [cols[j] for j in keep_c]
    return AttentionView(kind, np.asarray(maps, dtype=np.float32), rows, cols,
                         "words" if words else "pieces", sums_to_one)
