"""Figures of a class in session: the class's answers live, and after the reveal the class beside the model.

Pure builders: counts of answers and the model's side of a step (app.lesson.figures.Answer.for_class) in, Plotly
figures out; no Streamlit. Students' answers are escaped (Plotly would read <b> in them as markup): they show as
typed. Shares are of the students who answered.
"""
from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from app.figures.tokens import safe
from core.tokenizer import bare_word

CLASS, MODEL, OTHER = "#1f77b4", "#d95f02", "#9e9e9e"
BIG = 22              # px: labels read from the back of the room
LABEL = 22            # characters of an answer shown beside its bar in the teacher's narrow column


def _share(counts: dict, key) -> float:
    total = sum(counts.values())
    return counts.get(key, 0) / total if total else 0.0


def live_bars(counts: dict[str, int], choices: tuple = (), height: int = 360, top: int = 8) -> go.Figure:
    """The answers so far as projector-sized bars, most given first (a choice's options all shown, in order)."""
    if choices:
        labels = list(choices) + sorted(set(counts) - set(choices), key=lambda a: -counts[a])
    else:
        labels = sorted(counts, key=lambda a: (-counts[a], a))[:top]
    n = [counts.get(a, 0) for a in labels]
    shown = [safe(a if len(a) <= LABEL else a[:LABEL - 1] + "…") for a in labels]
    fig = go.Figure(go.Bar(x=n, y=shown, orientation="h", marker_color=CLASS,
                           text=[str(k) for k in n], textposition="outside", cliponaxis=False,
                           textfont=dict(size=BIG), hovertemplate="%{y}: %{x}<extra></extra>"))
    fig.update_layout(height=height, margin=dict(l=10, r=40, t=10, b=10), plot_bgcolor="white", showlegend=False)
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=18), automargin=True, type="category")
    fig.update_xaxes(visible=False, range=[0, max(n + [1]) * 1.2])
    return fig


def class_beside_attention(words: list[str], weights: list[float], counts: dict[str, int], head: str,
                           height: int = 300) -> go.Figure:
    """Two rows over the sentence's words: the class's taps (share of the students) and the head's attention of the
    word in focus ("the class's attention and layer 6, head 8's")."""
    taps = {}
    for answer, n in counts.items():
        taps[bare_word(answer)] = taps.get(bare_word(answer), 0) + n
    seen, class_row = set(), []
    for w in words:                       # a word twice in the sentence: the taps go to its first place
        key = bare_word(w)
        class_row.append(_share(taps, key) if key not in seen else 0.0)
        seen.add(key)
    z = [class_row, list(weights)]
    rows = ["the class", safe(head)]
    text = [[f"{x:.0%}" if x >= 0.05 else "" for x in r] for r in z]     # small shares unlabelled: no overlap
    fig = go.Figure(go.Heatmap(z=z, x=list(range(len(words))), y=rows, customdata=[[safe(w) for w in words]] * 2,
                               text=text, texttemplate="%{text}", colorscale="Blues", zmin=0,
                               zmax=max(max(class_row, default=0), max(weights, default=0), 0.01), showscale=False,
                               textfont=dict(size=13), xgap=2, ygap=6,
                               hovertemplate="%{y} on '%{customdata}': %{z:.0%}<extra></extra>"))
    fig.update_layout(title=dict(text=f"The class's attention and {safe(head)}'s", x=0.0), height=height,
                      margin=dict(l=10, r=10, t=60, b=10), plot_bgcolor="white")
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=BIG))
    fig.update_xaxes(tickangle=-45, tickvals=list(range(len(words))), ticktext=[safe(w) for w in words],
                     tickfont=dict(size=18))                  # positions: a word twice keeps both places
    return fig


def _piece_key(label: str) -> str:
    return bare_word(label.lstrip("-"))


def class_beside_probabilities(labels: list[str], probs: list[float], counts: dict[str, int],
                               height: int = 420, top: int = 8) -> go.Figure:
    """The next word: the class's guesses (share of the students) beside the model's probabilities, one pair of bars
    per word, the model's likeliest first, then the class's guesses it did not rank."""
    guesses, typed = {}, {}
    for answer, n in counts.items():
        guesses[bare_word(answer)] = guesses.get(bare_word(answer), 0) + n
        typed.setdefault(bare_word(answer), answer)                   # shown as a student typed it
    keys = [_piece_key(lab) for lab in labels]
    shown = list(labels[:top]) + [typed[g] for g in sorted(guesses, key=lambda g: -guesses[g])
                                  if g and g not in keys][:4]
    model = {k: p for k, p in zip(keys, probs)}
    model_share = [model.get(_piece_key(s), 0.0) for s in shown]
    class_share = [_share(guesses, _piece_key(s)) for s in shown]
    y = [safe(s) for s in shown]
    fig = go.Figure([go.Bar(x=class_share, y=y, name="the class", orientation="h", marker_color=CLASS,
                            text=[f"{x:.0%}" for x in class_share], textposition="outside", cliponaxis=False),
                     go.Bar(x=model_share, y=y, name="the model", orientation="h", marker_color=MODEL,
                            text=[f"{x:.0%}" for x in model_share], textposition="outside", cliponaxis=False)])
    fig.update_layout(title=dict(text="The class's guesses and the model's probabilities", x=0.0), barmode="group",
                      height=height, margin=dict(l=10, r=40, t=90, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0.0, font=dict(size=18)))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=BIG), type="category")
    fig.update_xaxes(tickformat=".0%", range=[0, max(model_share + class_share + [0.1]) * 1.25])
    return fig


def matching_choice(choices: tuple, chosen: str) -> str | None:
    """The option that names the model's answer: the same text, else the one its word starts like ('ihre' for
    'ihren')."""
    low = chosen.strip().lower()
    exact = [c for c in choices if c.lower() == low]
    if exact:
        return exact[0]
    starts = [c for c in choices if low.startswith(c.lower()[:3]) or c.lower().startswith(low[:3])]
    return starts[0] if len(starts) == 1 else None


def _wrapped(text: str, width: int = 16) -> str:
    """An option's label on lines of about `width` characters (Plotly's <br>), escaped."""
    return "<br>".join(safe(line) for line in textwrap.wrap(text, width) or [""])


def class_split_beside_choice(choices: tuple, counts: dict[str, int], model_choice: str | None,
                              who: str = "the model", height: int = 420) -> go.Figure:
    """A choice: the class's split over the options (a bar each, share of the students), the model's answer (or the
    lesson's) in its own colour and named under its bar."""
    shares = [_share(counts, c) for c in choices]
    colors = [MODEL if c == model_choice else CLASS for c in choices]
    labels = [_wrapped(c) + (f"<br><b>▲ {safe(who)}</b>" if c == model_choice else "") for c in choices]
    fig = go.Figure(go.Bar(x=list(range(len(choices))), y=shares, marker_color=colors,
                           text=[f"{s:.0%}" for s in shares], textposition="outside", cliponaxis=False,
                           textfont=dict(size=BIG), customdata=[safe(c) for c in choices],
                           hovertemplate="%{customdata}: %{y:.0%}<extra></extra>"))
    title = "The class's split" + (f" and {safe(who)}'s answer" if model_choice else "")
    fig.update_layout(title=dict(text=title, x=0.0), height=height, margin=dict(l=10, r=10, t=60, b=10),
                      plot_bgcolor="white", showlegend=False, bargap=0.35)
    fig.update_xaxes(tickvals=list(range(len(choices))), ticktext=labels, tickfont=dict(size=18))
    fig.update_yaxes(visible=False, range=[0, max(shares + [0.01]) * 1.25])
    return fig
