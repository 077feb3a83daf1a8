""""Why this word and not that one?" on a page: what each word pushed (TranslationModel.contrast) beside the same
step's attention, and how far each explanation can be trusted on this checkpoint (its contrast_faithfulness.json).
Shared by How it writes and Which pronoun?; the figure is app.figures.contrast's, the numbers core's."""
from __future__ import annotations

import streamlit as st

from app import cache
from app.display import show_figure
from app.figures.contrast import METHOD_LABELS as LABELS, attention_of, contrast_figure
from app.figures.style import readable
from app.text import md_escape
from core.attribution import METHODS
from core.studies import contrast_faithfulness as cf

HELP = ("Leave a word out: the source is read again without the word (its pieces deleted), and the change in "
        "log P(one word) − log P(the other) is its score: exact, the reference. Gradient × input and integrated "
        "gradients guess it from the gradient; ALTI-Logit follows each word's share through the attention blocks "
        "(Ferrando et al. 2023). Red: pushed towards the model's word; blue: towards the other.")


def why_section(ckpt, model, src: str, prefix, chosen, other, key: str, layer: int | None = None,
                head: int | None = None, presenter: bool = False, choose_head: bool = False) -> None:
    """The method picker, the strips of what pushed which way beside the attention, and the measured verdict.
    prefix, chosen, other: target ids (tuples) or 1-tuples of text, as cache.contrast takes them. layer, head: the
    attention shown (from 0; None: the mean), or choose_head: a picker of its own beside the methods."""
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    method = left.radio("Explained by", list(METHODS), format_func=LABELS.get, key=f"{key}_method", horizontal=True,
                        help=HELP)
    if choose_head:
        layer, head = head_picker(model, right, key)
    try:
        c = cache.contrast(ckpt, src, tuple(prefix or ()), tuple(chosen), tuple(other), method)
    except ValueError as e:
        st.warning(str(e))
        return
    attention, label = attention_of(c.cross, layer, head)
    fig = contrast_figure(c.src_words, c.src_scores, attention, c.chosen, c.other, method, label,
                          c.tgt_words, c.tgt_scores,
                          title=f"Why '{c.chosen}' and not '{c.other}'? (log P difference {c.log_odds:+.2f})")
    show_figure(readable(fig, presenter), f"why_{c.chosen}_not_{c.other}", key=f"{key}_figure", styled=True)
    if len(c.src_words):
        top, looked = c.ranking()[0], int(attention.argmax())
        st.caption(f"Attention looks most at **{md_escape(c.src_words[looked])}** ({attention[looked]:.2f}); "
                   f"{LABELS[method]} says **{md_escape(c.src_words[top])}** pushed most towards "
                   f"'{md_escape(c.chosen)}' ({c.src_scores[top]:+.2f})."
                   + (f" Integrated gradients' sum misses the log-odds change by {c.completeness_gap:.2f}."
                      if c.completeness_gap is not None else ""))
    verdict(model)


def head_picker(model, where, key: str) -> tuple[int | None, int | None]:
    """(layer, head) from 0 of the attention to show, or (None, None) for the mean; the head measured best on this
    checkpoint (its contrast_faithfulness.json) is marked."""
    try:
        best = (cf.read_result(model.folder) or {}).get("best_head") or {}
    except ValueError:
        best = {}
    options = [None] + [(n, k) for n in range(model.cfg.N_dec) for k in range(model.cfg.h)]

    def label(o):
        if o is None:
            return "mean of all layers and heads"
        mark = " (its top word flips most)" if (o[0] + 1, o[1] + 1) == (best.get("layer"), best.get("head")) else ""
        return f"layer {o[0] + 1}, head {o[1] + 1}{mark}"
    picked = where.selectbox("Attention beside it", options, format_func=label, key=f"{key}_head")
    return (None, None) if picked is None else picked


def verdict(model) -> None:
    """How far each explanation can be trusted here, as measured by scripts/evaluate_contrast.py."""
    try:
        result = cf.read_result(model.folder)
    except ValueError as e:
        st.warning(str(e))
        return
    if result is None:
        st.caption("Which explanation to trust is measured by `python scripts/evaluate_contrast.py "
                   f"checkpoints/{md_escape(model.card.name or 'NAME')}` (not yet run for this checkpoint).")
        return
    st.caption(md_escape(cf.verdict(result)))
