"""Figures of "How it writes": the next-piece candidates of one step, the beam as a tree, and where the step looked.

Pure builders: a core TracedTranslation (TranslationModel.trace) in, Plotly figures out; no Streamlit. Steps,
hypotheses, layers and heads are labelled from 1, as on every page.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures.tokens import safe
from core.model.trace import FINISHED, FORCED, KEPT, SAMPLED
from core.tokenizer import WORD_START, display_pieces, is_punctuation

FATE_COLORS = {KEPT: "#1f77b4", FINISHED: "#2ca02c", FORCED: "#9467bd", SAMPLED: "#1f77b4", "pruned": "#b0b0b0"}
FATE_WORDS = {KEPT: "kept in the beam", FINISHED: "ends the sentence (set aside with its score)",
              FORCED: "forced (your choice)", SAMPLED: "drawn at random", "pruned": "not kept (pruned)"}
WINNER, LIVE, DEAD, ENDED = "#d62728", "#1f77b4", "#c8c8c8", "#2ca02c"
OTHER = "every other piece"
LABEL_CHARS = 9                  # a node's label is cut to this: ~65 px, the room of a step in a 9-step window


def piece_label(piece: str) -> str:
    """A piece as a class reads it: a word start without SentencePiece's ▁, a piece inside a word after a hyphen
    ('-hlt' continues 'fe'), </s> as 'end'; byte pieces as the characters they stand for."""
    if piece in ("</s>", "<pad>"):
        return "(end)"
    shown = display_pieces([piece])[0]
    if shown.startswith(WORD_START):
        return shown[len(WORD_START):] or WORD_START
    return shown if is_punctuation(shown) or shown.startswith("<") else f"-{shown}"


def _node_text(trace, tokens: list) -> str:
    """The words of a hypothesis so far, the newest last (hover text)."""
    return safe(trace.text(tokens) or "(nothing yet)")


def candidates_figure(trace, step: int, hyp: int = 0, temperature: float = 1.0, title: str | None = None
                      ) -> go.Figure:
    """One horizontal bar per candidate next piece of hypothesis `hyp` at `step` (0-based), most probable on top,
    and one for every other piece together; coloured by what the search did with it, the chosen one outlined.
    temperature: redraws the probabilities as softmax(log P / T) (1: the model's own)."""
    h = trace.steps[step].hyps[hyp]
    probs = [c.prob for c in h.candidates]
    other = h.other
    if temperature != 1.0:
        tempered = h.probabilities(temperature)
        probs = [float(tempered[c.token]) for c in h.candidates]
        other = max(0.0, 1.0 - sum(probs))
    pieces = trace.pieces([c.token for c in h.candidates])
    labels = _unique([piece_label(p) for p in pieces])
    chosen = [c.fate in (KEPT, FINISHED, FORCED, SAMPLED) for c in h.candidates]
    colors = [FATE_COLORS.get(c.fate, FATE_COLORS["pruned"]) for c in h.candidates]
    ys, xs = labels + [OTHER], probs + [other]
    hover = [f"{safe(lab)}: {p:.1%}<br>{FATE_WORDS.get(c.fate, c.fate)}"
             + (f"<br>score {c.score:.3f}" if c.score is not None else "")
             for lab, p, c in zip(labels, probs, h.candidates)] + [f"{OTHER}: {other:.1%}"]
    fig = go.Figure(go.Bar(
        y=ys, x=xs, orientation="h", marker_color=colors + ["#e8e8e8"],
        marker_line=dict(color=["black" if c else "rgba(0,0,0,0)" for c in chosen] + ["rgba(0,0,0,0)"], width=2),
        text=[f"{p:.1%}" for p in xs], textposition="outside", cliponaxis=False,
        hovertext=hover, hoverinfo="text"))
    default = f"Step {step + 1}: which piece next?" if h.tokens else f"Step {step + 1}: the first piece"
    fig.update_layout(title=dict(text=safe(title or default), x=0.0), height=max(300, 28 * len(ys) + 110),
                      margin=dict(l=10, r=60, t=60, b=40), showlegend=False, plot_bgcolor="white", bargap=0.2)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=ys[::-1], automargin=True)
    fig.update_xaxes(title="probability" + ("" if temperature == 1.0 else f" at temperature {temperature:g}"),
                     range=[0, min(1.0, max(xs) * 1.2 + 0.05)], tickformat=".0%")
    return fig


def _cut(label: str, n: int = LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _unique(labels: list) -> list:
    """Labels made distinct for a category axis (two pieces can read alike, e.g. a byte and its character)."""
    seen, out = {}, []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} ({seen[lab]})")
    return out


def _on_winner(trace) -> set:
    """(step, hypothesis) on the winner's way: the highlighted path."""
    return set(trace.search.path()) if trace.search.winner is not None else set()


def _alive(trace) -> set:
    """(step, hypothesis) whose line lives on to a finished hypothesis; the others were pruned sooner or later."""
    keep = {(f.step, f.parent) for f in trace.search.finished}
    for t in range(len(trace.steps) - 1, 0, -1):
        for i, h in enumerate(trace.steps[t].hyps):
            if (t, i) in keep and h.parent is not None:
                keep.add((t - 1, h.parent))
    return keep


def beam_tree_figure(trace, step: int | None = None, window: int = 9, title: str = "") -> go.Figure:
    """The beam over the steps: one node per hypothesis (x: the step that wrote its newest piece, y: its rank),
    a line to the hypothesis it grew from, finished ones as stars. The winner's way is red; lines that never end
    grey (pruned, their words on hover only). The pieces written at `step` (0-based) are shaded, and the x axis
    shows `window` steps around them: drag sideways to scroll (a 30-word sentence stays readable)."""
    search = trace.search
    winner, alive = _on_winner(trace), _alive(trace)
    edge_x = {"win": [], "live": [], "dead": []}
    edge_y = {"win": [], "live": [], "dead": []}
    nodes = {kind: ([], [], [], [], []) for kind in ("win", "live", "dead")}     # x, y, label, hover, label place
    for t, s in enumerate(search.steps[1:], start=1):
        for i, h in enumerate(s.hyps):
            kind = "win" if (t, i) in winner else "live" if (t, i) in alive else "dead"
            edge_x[kind] += [t - 1, t, None]
            edge_y[kind] += [h.parent, i, None]
            x, y, lab, hov, place = nodes[kind]
            place.append("top center" if t % 2 else "bottom center")     # neighbours' labels never meet
            x.append(t)
            y.append(i)
            named = kind != "dead" or i == 0            # a pruned node keeps its word only at the top of the beam
            lab.append(safe(_cut(piece_label(trace.pieces(h.tokens[-1:])[0]))) if named else "")
            hov.append(f"{_node_text(trace, h.tokens)}<br>log P {h.logprob:.2f} · score {h.score:.2f}")
    fig = go.Figure()
    styles = {"dead": (DEAD, 1, "pruned (its line ends without finishing)"), "live": (LIVE, 1.6, "kept"),
              "win": (WINNER, 3, "the winner's way")}
    for kind in ("dead", "live", "win"):
        color, width, name = styles[kind]
        fig.add_trace(go.Scatter(x=edge_x[kind], y=edge_y[kind], mode="lines", line=dict(color=color, width=width),
                                 hoverinfo="skip", showlegend=False))
        x, y, lab, hov, place = nodes[kind]
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers+text", text=lab, textposition=place,
                                 marker=dict(color=color, size=9 if kind == "win" else 7), name=name,
                                 hovertext=hov, hoverinfo="text", textfont=dict(color="#1a1a1a" if kind != "dead"
                                                                                else "#8a8a8a")))
    ends = search.finished
    best = search.winner
    fig.add_trace(go.Scatter(
        x=[f.step + 1 for f in ends], y=[f.parent for f in ends], mode="markers",
        marker=dict(symbol="star", size=[18 if f is best else 12 for f in ends],
                    color=[WINNER if f is best else ENDED for f in ends], line=dict(color="black", width=1)),
        name="finished (score)", hoverinfo="text",
        hovertext=[f"{_node_text(trace, f.tokens)} ■<br>finished at step {f.step + 1}: log P {f.logprob:.2f}, "
                   f"score {f.score:.3f}" + (" (the winner)" if f is best else "") for f in ends]))
    last = len(search.steps)
    focus = 0 if step is None else step
    start = max(0.5, min(focus + 1 - window / 2, last + 1.5 - window))
    if step is not None:
        fig.add_vrect(x0=step + 0.5, x1=step + 1.5, fillcolor="#fff3b0", opacity=0.6, line_width=0, layer="below")
    K = max((len(s.hyps) for s in search.steps), default=1)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=150 + 48 * K, dragmode="pan", showlegend=False,
                      margin=dict(l=40, r=10, t=60 if title else 30, b=40), plot_bgcolor="white")
    fig.update_xaxes(title="step (the piece it writes)", range=[start, start + window], dtick=1,
                     showgrid=False, zeroline=False)
    fig.update_yaxes(title="rank in the beam", autorange="reversed", dtick=1, tickvals=list(range(K)),
                     ticktext=[str(k + 1) for k in range(K)], range=[K - 0.5, -0.8], showgrid=False,
                     zeroline=False)
    return fig


def source_strip_figure(words: list, weights: np.ndarray, title: str = "") -> go.Figure:
    """One row of cells over the source words: how much attention the step paid to each (a row sums to 1)."""
    w = np.asarray(weights, dtype=float)[None, :]
    labels = _unique([safe(x) for x in words])
    fig = go.Figure(go.Heatmap(z=w, x=labels, y=[""], zmin=0, zmax=max(float(w.max()), 1e-6), colorscale="Blues",
                               text=[[f"{v:.2f}" for v in w[0]]], texttemplate="%{text}", showscale=False,
                               hovertemplate="%{x}: %{z:.3f}<extra></extra>", xgap=1))
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=190, margin=dict(l=10, r=10, t=50, b=10),
                      plot_bgcolor="white")
    fig.update_xaxes(type="category", tickangle=-45, side="bottom", automargin=True)
    fig.update_yaxes(showticklabels=False)
    return fig
