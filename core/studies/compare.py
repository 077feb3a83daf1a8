"""Two checkpoints on one sentence: their attention maps aligned token by token, and how much they differ.

Both models are teacher-forced on the same target text (the first model's own translation unless one
is given), so decoder and cross-attention maps line up as well. With the same tokenizer the maps are
compared piece by piece; with different tokenizers word by word (core.views.attention_view),
when both split the text into the same words. Rows and columns are labelled as everywhere (core.views).

Head i of one model has nothing to do with head i of another model trained separately (heads are
not ordered); per-head differences mean most for two snapshots of one training run. The mean over
heads of a layer (js_layers) is comparable in any case.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.views import KINDS, AttentionView, attention_view


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits between rows of p and q (..., T, K) -> (..., T); 0 same … 1 disjoint."""
    p, q = p.astype(np.float64), q.astype(np.float64)
    m = 0.5 * (p + q)

    def kl(x):  # KL(x || m), 0 log 0 = 0; m > 0 wherever x > 0
        return (x * np.log2(np.where(x > 0, x, 1.0) / np.where(x > 0, m, 1.0))).sum(-1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


@dataclass
class Comparison:
    """Aligned maps of two AttendResults. For each comparable kind ("enc_self", "dec_self", "cross"):
    maps[kind] = (A, B), each (L, h, Tq, Tk) over the common layers and heads; labels[kind] = (rows, cols);
    level[kind] = "pieces" or "words"; js[kind] = (L, h) mean JS over rows; js_layers[kind] = (L,) JS of
    the head-averaged maps. Kinds that cannot be aligned are missing, with a note saying why."""
    a: object
    b: object
    maps: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    level: dict = field(default_factory=dict)
    js: dict = field(default_factory=dict)
    js_layers: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def attend_both(ma, mb, src: str, tgt: str | None = None, beam: int = 1):
    """(AttendResult of ma, of mb) on `src`, both teacher-forced on `tgt` or else on ma's translation."""
    if tgt is None:
        tgt = ma.attend(src, beam=beam).tgt
    if not tgt.strip():   # the model translated to nothing: compare the encoders only
        return ma.attend(src, beam=beam), mb.attend(src, beam=beam)
    return ma.attend(src, tgt=tgt), mb.attend(src, tgt=tgt)


def _align(ra, rb, kind: str) -> tuple[AttentionView, AttentionView] | None:
    """The two results' `kind` maps on common labels (core.views: decoder rows are the pieces written): piece by
    piece when both have the same pieces, else word by word when both have the same words; None otherwise."""
    va, vb = attention_view(ra, kind), attention_view(rb, kind)
    if (va.rows, va.cols) == (vb.rows, vb.cols):
        return va, vb
    va, vb = attention_view(ra, kind, words=True), attention_view(rb, kind, words=True)
    return (va, vb) if (va.rows, va.cols) == (vb.rows, vb.cols) else None


def compare_results(ra, rb) -> Comparison:
    """Align two AttendResults of the same sentence and measure, per head, how differently they attend."""
    cmp = Comparison(ra, rb)
    for kind in KINDS:
        aligned = _align(ra, rb, kind)
        if aligned is None:
            cmp.notes.append(f"{KINDS[kind]}: the two models see different words here, "
                             "so their maps cannot be compared.")
            continue
        va, vb = aligned
        A, B, row_labels, col_labels, level = va.maps, vb.maps, va.rows, va.cols, va.level
        L, h = min(A.shape[0], B.shape[0]), min(A.shape[1], B.shape[1])
        if (A.shape[0], A.shape[1]) != (B.shape[0], B.shape[1]):
            cmp.notes.append(f"{KINDS[kind]}: the models have {A.shape[0]}×{A.shape[1]} and {B.shape[0]}×{B.shape[1]} "
                             f"layers×heads; the first {L}×{h} are compared.")
        A, B = A[:L, :h], B[:L, :h]
        cmp.maps[kind], cmp.labels[kind], cmp.level[kind] = (A, B), (row_labels, col_labels), level
        cmp.js[kind] = js_divergence(A, B).mean(-1)                                 # (L, h)
        cmp.js_layers[kind] = js_divergence(A.mean(1), B.mean(1)).mean(-1)          # (L,)
    if any(v == "words" for v in cmp.level.values()):
        cmp.notes.append("The models use different tokenizers: maps are compared word by word.")
    return cmp
