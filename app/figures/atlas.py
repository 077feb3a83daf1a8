"""The atlas of every head (core.studies.atlas) as one figure, a head's scores as a table, and links that open its
example sentences in the explorer.

Pure builders shared by app/heads_tabs/atlas.py, app.notebook and the tests. Layers and heads count from 1 in the
atlas JSON, as on every page.
"""
from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import safe
from core.studies.atlas import EVERY_KIND, ROLES
from core.views import KINDS as KIND_NAMES

COLOURS = {   # one colour per role; resting and "no role" in greys: they are the absence of work
    "previous": "#1f77b4", "next": "#17becf", "syntax": "#2ca02c", "long": "#d62728", "anaphora": "#9467bd",
    "alignment": "#ff7f0e", "next_source": "#e377c2", "induction": "#8c564b", "duplicate": "#bcbd22",
    "resting": "#b0b0b0", "sink": "#c7c7c7", None: "#eeeeee",
}
LABELS = {"previous": "prev", "next": "next", "syntax": "syn", "long": "long", "anaphora": "ana",
          "alignment": "align", "next_source": "src", "induction": "ind", "duplicate": "dup", "resting": "rest",
          "sink": "sink", None: "–"}
ORDER = list(COLOURS)


def role_name(role: str | None) -> str:
    """What a role means, for a legend or a table ("no role above its baseline" for None)."""
    return ROLES.get(role, "no role above its baseline")


def kinds_of(atlas: dict) -> list[str]:
    """The kinds of attention an atlas has heads of, in the pages' order (a language model's one: "self")."""
    return [k for k in EVERY_KIND if atlas["heads"].get(k)]


def kind_name(atlas: dict, kind: str) -> str:
    """What a kind of attention is called: the atlas' own name for it (a language model's), else the pages'."""
    return atlas.get("names", {}).get(kind) or KIND_NAMES.get(kind, kind)


def _grid(entries: list, field: str):
    """(layers x heads) array of one field of a kind's head entries."""
    n_layers, n_heads = max(e["layer"] for e in entries), max(e["head"] for e in entries)
    out = np.empty((n_layers, n_heads), dtype=object)
    for e in entries:
        out[e["layer"] - 1, e["head"] - 1] = e.get(field)
    return out


def _hover(e: dict) -> str:
    """A head's hover text: its role, margin and detail."""
    role = e["role"]
    what = role_name(role) + (f" ({e['detail']})" if e.get("detail") else "")
    if role is None:
        return f"layer {e['layer']}, head {e['head']}: {safe(what)} (best margin {e['margin']:+.1f} points)"
    score, base = e["scores"][role]
    return f"layer {e['layer']}, head {e['head']}: {safe(what)}<br>{score:.1f}% vs baseline {base:.1f}%"


def atlas_figure(atlas: dict, title: str = "What every head does most, over a corpus") -> go.Figure:
    """One heatmap per kind of attention (layers down, heads across), each head coloured by its strongest role.

    Streamlit reports clicks on scatter points, not on heatmap cells: each cell carries an invisible marker with
    customdata (kind index, layer, head), layers and heads from 1, and the hover text."""
    kinds = kinds_of(atlas)
    fig = make_subplots(1, len(kinds), subplot_titles=[kind_name(atlas, k) for k in kinds], horizontal_spacing=0.06)
    n = len(ORDER)
    scale = [[pos, COLOURS[role]] for i, role in enumerate(ORDER) for pos in (i / n, (i + 1) / n)]
    for col, kind in enumerate(kinds, 1):
        entries = atlas["heads"][kind]
        roles = _grid(entries, "role")
        z = np.vectorize(lambda r: ORDER.index(r) + 0.5)(roles).astype(float)
        fig.add_trace(go.Heatmap(z=z, zmin=0, zmax=n, colorscale=scale, showscale=False, xgap=2, ygap=2,
                                 x=list(range(1, z.shape[1] + 1)), y=list(range(1, z.shape[0] + 1)),
                                 text=np.vectorize(LABELS.get)(roles), texttemplate="%{text}", hoverinfo="skip"),
                      1, col)
        fig.add_trace(go.Scatter(x=[e["head"] for e in entries], y=[e["layer"] for e in entries], mode="markers",
                                 marker=dict(size=26, color="rgba(0,0,0,0)", symbol="square"), showlegend=False,
                                 customdata=[[EVERY_KIND.index(kind), e["layer"], e["head"]] for e in entries],
                                 hovertext=[_hover(e) for e in entries], hovertemplate="%{hovertext}<extra></extra>"),
                      1, col)
        fig.update_xaxes(title_text="head", dtick=1, range=[0.5, z.shape[1] + 0.5], showgrid=False, zeroline=False,
                         row=1, col=col)                                   # the markers must not widen the axes
        fig.update_yaxes(title_text="layer" if col == 1 else None, dtick=1, range=[z.shape[0] + 0.5, 0.5],
                         showgrid=False, zeroline=False, row=1, col=col)
    used = [r for r in ORDER if any(e["role"] == r for k in kinds for e in atlas["heads"][k])]
    for role in used:                                                     # the legend: one invisible point a role
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=safe(role_name(role)),
                                 marker=dict(size=12, color=COLOURS[role], symbol="square")))
    fig.update_layout(title=title, height=380, legend=dict(orientation="h", y=-0.25), plot_bgcolor="white",
                      margin=dict(t=70, b=40))
    return fig


def head_table(entry: dict) -> pd.DataFrame:
    """Every role a head was scored on: its score, the role's baseline and the margin, the strongest first."""
    rows = [{"role": role_name(r), "score (%)": s, "baseline (%)": b, "margin (points)": round(s - b, 1)}
            for r, (s, b) in entry["scores"].items()]
    return pd.DataFrame(rows).sort_values("margin (points)", ascending=False, ignore_index=True)


def explorer_link(checkpoint: str, kind: str, layer: int, head: int, src: str, tgt: str | None = None) -> str:
    """A link that opens a sentence in the explorer on one head (layer and head from 1; app.url_state's names). The
    explorer is the app's first page: its address is the app's own ("./", whatever the page the link sits on)."""
    params = {"checkpoint": checkpoint, "text": src, **({"tgt": tgt} if tgt else {}), "kind": kind,
              "layer": layer, "head": head}
    return "./?" + urlencode(params)


def roles_by_layer_table(atlas: dict, kind: str) -> pd.DataFrame:
    """Layers as rows, roles as columns: how many heads of each layer have each role."""
    entries = atlas["heads"].get(kind, [])
    table = pd.crosstab(pd.Series([e["layer"] for e in entries], name="layer"),
                        pd.Series([LABELS[e["role"]] for e in entries], name="role"))
    return table.reset_index()
