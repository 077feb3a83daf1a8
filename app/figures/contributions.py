"""Figures of what tokens contribute (core.studies.contributions and core.studies.faithfulness): pure builders,
data in, Plotly figure or table out (no Streamlit here)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.figures.tokens import label_font, safe, tick_angle

SOURCE, PREFIX = "#2e86c1", "#e67e22"
FAITH_COLUMNS = {"method": "method", "what": "what it ranks by", "words": "words", "mean_drop": "mean drop (nats)",
                 "stderr": "± s.e.", "median_drop": "median drop", "flipped": "P > 1/2 lost"}


def source_share_figure(words: list[str], share: np.ndarray, title: str = "", width: float = 1100) -> go.Figure:
    """One stacked bar per generated word: the share of its prediction from the source and from the prefix (ALTI+)."""
    share = np.clip(np.asarray(share, dtype=float), 0.0, 1.0)
    labels = [f"{safe(w)} ({i + 1})" for i, w in enumerate(words)]    # a word written twice keeps two bars
    font = label_font(len(labels))                                    # as the heatmaps' labels
    fig = go.Figure([
        go.Bar(x=labels, y=share, name="from the source", marker_color=SOURCE,
               hovertemplate="%{x}: %{y:.0%} from the source<extra></extra>"),
        go.Bar(x=labels, y=1 - share, name="from the words written before", marker_color=PREFIX,
               hovertemplate="%{x}: %{y:.0%} from the words written before<extra></extra>")])
    fig.update_layout(barmode="stack", title=dict(text=safe(title), x=0.0), height=380,
                      yaxis=dict(title="share of the prediction", tickformat=".0%", range=[0, 1]),
                      xaxis=dict(tickangle=tick_angle(labels, width - 70, font), tickfont=dict(size=font)),
                      plot_bgcolor="white",
                      legend=dict(orientation="h", y=1.12, x=0), margin=dict(l=60, r=10, t=80, b=80))
    return fig


def faithfulness_frame(table: list[dict]) -> pd.DataFrame:
    """The faithfulness table (core.studies.faithfulness.table) with readable column names."""
    return pd.DataFrame(table).rename(columns=FAITH_COLUMNS)


def faithfulness_figure(table: list[dict], title: str = "") -> go.Figure:
    """Mean drop in log-probability when each method's top source word is removed, with its standard error."""
    rows = [r for r in table if r.get("mean_drop") is not None]
    fig = go.Figure(go.Bar(
        x=[r["method"] for r in rows], y=[r["mean_drop"] for r in rows],
        error_y=dict(type="data", array=[r.get("stderr") or 0 for r in rows]),
        marker_color=["#95a5a6" if r["method"] == "random" else SOURCE for r in rows],
        text=[f"{r['mean_drop']:.2f}" for r in rows], textposition="outside",
        hovertemplate="%{x}: %{y:.3f} nats<extra></extra>"))
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=360, plot_bgcolor="white",
                      yaxis_title="drop in log P(word), nats", xaxis_title="whose top source word is removed",
                      margin=dict(l=70, r=10, t=60, b=50))
    return fig
