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
- A task prompt added for the user (T5's "translate English to German: ", AttendResult.src_prompt pieces first in
  the source) keeps its rows and columns, the model attends to it, but is labelled ⟨as the prompt⟩, never as the
  sentence; specials=False drops it with <s> and </s>, and studies that match pieces to words use sentence_only.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .tokenizer import WORD_START, merge_attention, merge_words, word_ids

KINDS = {"enc_self": "Encoder self-attention", "dec_self": "Decoder self-attention",
         "cross": "Encoder-decoder attention"}
SHORT = {"enc_self": "Encoder self", "dec_self": "Decoder self", "cross": "Encoder-decoder"}
SPECIALS = ("<s>", "</s>", "<pad>")
# kind -> (tokens that label the rows, tokens that label the columns), as fields of an AttendResult
SIDES = {"enc_self": ("src_tokens", "src_tokens"), "dec_self": ("out_tokens", "tgt_tokens"),
         "cross": ("out_tokens", "src_tokens")}
PROMPT = "\u27e8{}\u27e9"      # how a piece or word of the prompt is labelled: ⟨translate⟩
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
    n = result.get("src_prompt", 0) if isinstance(result, dict) else getattr(result, "src_prompt", 0)
    prompt = prompt_count(side_tokens(result, "enc_self")[0], n, words)    # how many source labels are the prompt's
    if words:
        maps, rows, cols = to_words(maps, rows, cols)
    n_rows, n_cols = (prompt if kind == "enc_self" else 0), (prompt if kind != "dec_self" else 0)
    rows, cols = mark_prompt(rows, n_rows), mark_prompt(cols, n_cols)
    sums_to_one = True
    if not specials:
        keep_r = [i for i, t in enumerate(rows) if t not in SPECIALS and i >= n_rows]
        keep_c = [j for j, t in enumerate(cols) if t not in SPECIALS and j >= n_cols]
        if keep_r and keep_c:              # a translation of nothing but </s> keeps its specials
            sums_to_one = len(keep_c) == len(cols)
            maps = maps[..., keep_r, :][..., keep_c]
            rows, cols = [rows[i] for i in keep_r], [cols[j] for j in keep_c]
    return AttentionView(kind, np.asarray(maps, dtype=np.float32), rows, cols,
                         "words" if words else "pieces", sums_to_one)


def prompt_count(src_tokens: list, n: int, words: bool) -> int:
    """How many source labels are the prompt's, when its first n pieces are: n pieces, or the words they make."""
    return max(word_ids(src_tokens)[:n]) + 1 if n and words else n


def mark_prompt(labels: list, n: int) -> list:
    """The labels with the first n marked as the prompt's: ⟨translate⟩; a piece keeps its word mark in front
    (▁⟨translate⟩), so that pieces merged into words later still make the prompt's words."""
    return [(WORD_START + PROMPT.format(t[1:]) if t.startswith(WORD_START) else PROMPT.format(t)) if i < n else t
            for i, t in enumerate(labels)]


def is_prompt(label: str) -> bool:
    """Whether a label (piece or word, as mark_prompt gives them) is the prompt's: ⟨translate⟩, ▁⟨translate⟩."""
    label = label.removeprefix(WORD_START)
    return label.startswith(PROMPT[0]) and label.endswith(PROMPT[-1])


def sentence_only(result):
    """An AttendResult without its prompt (T5's task prompt): the source pieces, the encoder's rows and columns and
    the cross-attention's columns of the sentence alone, for studies that match pieces to the sentence's words.
    Rows are not renormalised: the weight the prompt drew stays left out, which is the truth about it."""
    n = getattr(result, "src_prompt", 0)
    if not n:
        return result
    cut = {"src_tokens": list(result.src_tokens[n:]), "enc_self": result.enc_self[..., n:, n:], "src_prompt": 0}
    if result.cross is not None:
        cut["cross"] = result.cross[..., n:]
    if result.vectors:
        keys = {"enc_self": (slice(n, None), slice(n, None)), "cross": (slice(None), slice(n, None))}
        cut["vectors"] = {kind: (q[..., keys[kind][0], :], k[..., keys[kind][1], :]) if kind in keys else (q, k)
                          for kind, (q, k) in result.vectors.items()}
    return dataclasses.replace(result, **cut)
