"""A language model's offline report (app.figures.report.lm_report): a text's every map (each layer and head of its
self-attention, switchable in the file), what the model makes of the text (its next-token guess, or the fillers of
each [MASK]), and the head finder's grids below it (What heads do: induction, previous token, duplicate token and
first-token sink of a decoder-only model, on repeated random tokens; previous and next token, [CLS] and [SEP] of an
encoder-only one, on the probe sentences). No Streamlit here: app.notebook.report and scripts/export_report.py use it.
"""
from __future__ import annotations

import datetime

import plotly.graph_objects as go

from app.checkpoints import DECODER_ONLY, model_family
from app.figures import heads as head_figs
from app.figures.report import lm_report
from app.figures.training import describe_model
from app.lm import scores, views
from core.studies import analysis, induction

GRIDS = {DECODER_ONLY: ["induction", "previous", "duplicate", "sink"],
         "encoder-only": ["previous", "next", "cls", "sep"]}


def head_grids(lm) -> list[tuple[go.Figure, str]]:
    """The head finder's first grids, each (figure, what it was measured on): computed once per model (the
    probe sentences and, for a decoder-only model, 32 repeated random sequences), shared by every text's file."""
    decoder = model_family(lm) == DECODER_ONLY
    table = scores.head_table(lm, scores.probe_texts(), induction.induction_scores(lm.model) if decoder else None)
    names = scores.score_names(lm)
    out = []
    for score in GRIDS[model_family(lm)]:
        where = (f"{table.attrs['sequences']} sequences of {table.attrs['L']} random tokens repeated twice"
                 if decoder else f"{table.attrs['sentences']} English probe sentences")
        grid = analysis.score_grid(table, score, views.KIND)
        fig = head_figs.head_grid(grid, f"{views.title(lm)}: {names[score][0]}", names[score][0], zmin=0)
        out.append((fig, f"{names[score][1]} Each cell is the mean over {where}."))
    return out


def what_it_makes(lm, res) -> list[tuple[str, str]]:
    """(label, text) lines: the text (and its second sentence), then the next-token guess or the [MASK] fillers."""
    lines = [("Text", res.text)] + ([("Second sentence", res.pair)] if getattr(res, "pair", None) else [])
    if model_family(lm) == DECODER_ONLY:
        return lines + [("Its guess for the next token", views.next_token(lm, res))]
    for position, fills in views.fillers(lm, res):
        lines.append((f"[MASK] at position {position}", ", ".join(f"{w} {p:.0%}" for w, p in fills)))
    if not lm.has_head:
        lines.append(("[MASK]", "this model has no masked-LM head: it cannot fill blanks"))
    return lines


def report(lm, text: str, pair: str | None = None, grids: list | None = None,
           date: datetime.date | None = None) -> str:
    """The HTML file (text) of one text: its maps, what the model makes of it, the head grids (head_grids(lm)
    when None). pair: an encoder-only model's second sentence. ValueError for a text the model cannot read."""
    if pair and model_family(lm) == DECODER_ONLY:
        raise ValueError("A decoder-only language model reads one text: put the second sentence after the first.")
    res = lm.attend(text) if pair is None else lm.attend(text, pair)
    view = views.lm_view(lm, res)
    lines = what_it_makes(lm, res) + [("Note", n) for n in res.notices]
    return lm_report(view, (views.title(lm), views.ROW_TITLE, views.COL_TITLE), lines, lm.card.name or "checkpoint",
                     describe_model(lm.card, lm.cfg), head_grids(lm) if grids is None else grids, date)
