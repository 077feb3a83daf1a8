"""Attention figures: one head as a heatmap, every head as a grid, and the paper's head view (lines).

Pure builders: arrays and token lists in, Plotly figures out. Rows are the attending positions
(queries), columns the attended ones (keys), labelled as core.views says; positions shown from 1.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from app.figures.style import fit_title
from app.figures.tokens import (COLORBAR, COLORSCALE, label_font, safe, tick_angle, tick_labels, token_axes,
                                token_heatmap, top_of_scale)
from core.views import position


SCREEN_WIDTH = 820         # px: what a stretched figure gets beside the sidebar in a 1280 px window (a projector's)
ROW_PX, MIN_ROW_PX = 28, 14  # px: the most and the least a heatmap's row gets (before presenter mode's x1.5)
# px a 1280x720 first screen leaves the explorer's whole map under its title, sentence and controls (the map's top at
# 340 px, measured by tests/browser/test_share_browser.py): its rows shrink to fit, never under MIN_ROW_PX
MAP_HEIGHT = 720 - 340 - 2
TITLE_PX = 32              # px above the column words for a one-line title (words on top)


# Each kind of map's axis titles: what a row and a column of it are (the explorer's and the notebook's maps)
ROW_TITLES = {"enc_self": "attending source token", "dec_self": "decoder step (the token it writes)",
              "cross": "decoder step (the token it writes)"}
COL_TITLES = {"enc_self": "attended source token", "dec_self": "tokens already read by the decoder",
              "cross": "source token"}


def heatmap_figure(attn: np.ndarray, rows: list[str], cols: list[str], title: str = "",
                   zmax: float | None = None, row_title: str = "attending (query)",
                   col_title: str = "attended (key)", text_scale: float = 1.0,
                   width: int = SCREEN_WIDTH, row_px: int = ROW_PX, words_on_top: bool = False,
                   max_height: int | None = None) -> go.Figure:
    """One head's [R, C] map as a heatmap (app.figures.tokens.token_heatmap); hover shows both tokens and the weight.

    The colour scale runs from 0 to zmax (1: weights compare across heads; None: the largest weight here).
    Column labels stay level where they fit the `width` the figure is expected to get (its text drawn
    `text_scale` times larger: presenter mode), slanted or upright where not; below the map, or (words_on_top)
    above it, as in the paper's figures, under the title (and without col_title: the room is the map's, and a
    phone's narrower figure may turn the words upright into it). A row gets at most `row_px` pixels (a page that
    must show the whole map on a small screen gives fewer), fewer in a long map or where the whole figure must fit
    `max_height` pixels (a first screen), never under 14.
    """
    attn = np.asarray(attn, dtype=np.float32)
    R, C = attn.shape
    fig = go.Figure(token_heatmap(attn, rows, cols, zmax=zmax))
    cell = max(MIN_ROW_PX, min(row_px, 700 // max(R, C, 1)))      # pixels per row: never too thin to read a label
    def longest(labels):
        return max((len(t) for t in labels), default=1)
    left = 40 + 8 * min(longest(rows), 20)
    col_font = label_font(C)
    angle = tick_angle(tick_labels(cols), width - left - 90, col_font * text_scale)     # 90 px: the colour bar
    # explicit margins for the labels: kaleido's PNG/SVG export does not always grow them by itself
    labels_px = 20 if angle == 0 else 5 * min(longest(cols), 20) if angle == -45 else 7 * min(longest(cols), 20)
    if words_on_top:       # the title, then the column words (their title left to the page), then the map
        top, bottom, slack = TITLE_PX + labels_px, 10, 0
    else:                  # 40 px of slack in the drawing: Plotly's automargin may take some for long labels
        top, bottom, slack = 50, 50 + labels_px, 40
    if max_height:
        cell = max(MIN_ROW_PX, min(cell, (max_height - top - bottom - slack) // max(R, 1)))
    title_at = dict(yref="container", y=1.0, yanchor="top", pad=dict(t=12)) if words_on_top else {}
    fig.update_layout(title=dict(text=safe(title), x=0.0, **title_at), height=R * cell + top + bottom + slack,
                      plot_bgcolor="white", margin=dict(l=left, r=10, t=top, b=bottom))
    return token_axes(fig, rows, cols,
                      # on top: Plotly's own angle, the one the labels need where the figure is drawn (on a phone
                      # narrower than `width`)
                      x=dict(**({"autotickangles": [0, -45, -90]} if words_on_top else {"tickangle": angle}),
                             tickfont=dict(size=col_font), side="top" if words_on_top else "bottom",
                             title=dict(text="" if words_on_top else col_title, standoff=12), showgrid=False),
                      y=dict(tickfont=dict(size=label_font(R)), title=dict(text=row_title, standoff=12),
                             showgrid=False))


def heatmap_from_frame(frame: dict, attn: np.ndarray, title: str = "", zmax: float | None = None) -> go.Figure:
    """Another head's heatmap from `frame`, the dict of a (styled) heatmap_figure with the same rows, columns
    and colour mode: only the map, the top of the colour scale and the title change.

    Building and validating a Plotly figure costs tens of milliseconds, and a head switch repeats it for the
    same labels and axes; here the frame was validated once, so the copy skips validation (Plotly's
    `_validate=False`) and costs about a millisecond. The result equals heatmap_figure(attn, ..., title, zmax)
    given the same styling (tests/test_head_switch.py). The frame is shared, never changed: the changed parts
    are new dicts.
    """
    attn = np.asarray(attn, dtype=np.float32)
    trace = {**frame["data"][0], "z": attn, "zmax": top_of_scale(attn, zmax)}
    layout = {**frame["layout"], "title": {**frame["layout"]["title"], "text": safe(title)}}
    return go.Figure({"data": [trace], "layout": layout}, _validate=False)


def model_view_figure(maps: np.ndarray, rows: list[str], cols: list[str], title: str = "",
                      selected: tuple[int, int] | None = None, zmax: float | None = None) -> go.Figure:
    """Every layer (grid rows) x head (grid columns) as small maps on one shared colour scale, 0 to zmax
    (None: the largest weight of the grid).

    Drawn as ONE heatmap with blank gaps between the tiles: 48 separate subplots take seconds to build
    and megabytes to send. Each tile also carries a few invisible markers with customdata [layer, head],
    because Streamlit reports clicks on scatter points but not on heatmap cells: a click opens the tile.
    """
    maps = np.asarray(maps, dtype=np.float32)
    L, H, R, C = maps.shape
    gap = max(1, round(0.12 * max(R, C)))
    Y, X = L * (R + gap) - gap, H * (C + gap) - gap
    z = np.full((Y, X), np.nan, dtype=np.float32)
    ids = np.zeros((Y, X, 2), dtype=np.int8)                  # (layer, head), 1-based, for the hover text
    top, left = np.arange(L) * (R + gap), np.arange(H) * (C + gap)
    for layer in range(L):
        for h in range(H):
            z[top[layer]:top[layer] + R, left[h]:left[h] + C] = maps[layer, h]
            ids[top[layer]:top[layer] + R, left[h]:left[h] + C] = (layer + 1, h + 1)
    fig = go.Figure(go.Heatmap(
        z=z, customdata=ids, coloraxis="coloraxis", hoverongaps=False,
        hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>weight %{z:.3f}<extra></extra>"))
    # click targets: a lattice of up to 4x4 transparent markers on every tile
    fy, fx = np.meshgrid(np.linspace(0, R - 1, min(R, 4)), np.linspace(0, C - 1, min(C, 4)), indexing="ij")
    lh = np.array([(layer, h) for layer in range(L) for h in range(H)])
    px = (left[lh[:, 1]][:, None] + fx.ravel()[None]).ravel()
    py = (top[lh[:, 0]][:, None] + fy.ravel()[None]).ravel()
    targets = np.repeat(lh, fx.size, axis=0)                 # [layer, head], 0-based, per marker
    fig.add_trace(go.Scatter(
        x=px, y=py, mode="markers", showlegend=False, marker=dict(size=16, color="rgba(0,0,0,0)"),
        customdata=targets, hoverinfo="text",
        hovertext=[f"layer {layer + 1}, head {h + 1}: click to open it large" for layer, h in targets]))
    if selected is not None and 0 <= selected[0] < L and 0 <= selected[1] < H:
        layer, h = selected
        fig.add_shape(type="rect", x0=left[h] - 0.5 - gap / 3, x1=left[h] + C - 0.5 + gap / 3,
                      y0=top[layer] - 0.5 - gap / 3, y1=top[layer] + R - 0.5 + gap / 3,
                      line=dict(color="crimson", width=3))
    zmax = top_of_scale(maps, zmax)
    fig.update_xaxes(tickmode="array", tickvals=left + (C - 1) / 2, ticktext=[f"head {h + 1}" for h in range(H)],
                     side="top", showgrid=False, zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=top + (R - 1) / 2, ticktext=[f"layer {i + 1}" for i in range(L)],
                     autorange="reversed", showgrid=False, zeroline=False)
    fig.update_layout(
        title=dict(text=safe(title), x=0.0), plot_bgcolor="white", hovermode="closest", clickmode="event+select",
        coloraxis=dict(colorscale=COLORSCALE, cmin=0.0, cmax=zmax, colorbar=COLORBAR),
        height=int(L * 105 * np.clip(R / C, 0.6, 1.6) + 90), margin=dict(l=70, r=10, t=70, b=10))
    return fig


LINE_WIDTH = (1.0, 12.0)   # px of a line of weight 0 and of weight 1, as on a laptop screen (presenter mode: x1.5)


def line_style(weight: float) -> tuple[float, float]:
    """(opacity, width in px) of a head-view line of this weight: both grow with it, so that the strong links stand
    out from the back of a room. The square root lifts the middle weights (0.25 is drawn half opaque): the
    paper's lines are bold, and opacity alone left a link of 0.3 pale grey."""
    w = float(np.clip(weight, 0.0, 1.0))
    return float(np.sqrt(w)), LINE_WIDTH[0] + (LINE_WIDTH[1] - LINE_WIDTH[0]) * w


def head_colors(n_heads: int) -> list[str]:
    """One clearly different colour per head (Plotly's 10, or 24 for the 16 heads of "big")."""
    palette = qualitative.Plotly if n_heads <= 10 else qualitative.Dark24
    return [palette[i % len(palette)] for i in range(n_heads)]


def head_view_figure(tokens_left: list[str], tokens_right: list[str], attn: np.ndarray, heads=None,
                     focus: int | None = None, title: str = "", layout: str = "columns",
                     colors: list[str] | None = None, min_weight: float = 0.005,
                     max_lines: int = 3000) -> go.Figure:
    """The paper's picture: the sentence twice, facing itself, joined by lines as opaque and as wide as the weight.

    attn [h, T, S]: row i of head k joins tokens_left[i] to every tokens_right[j] by a line of line_style(
    attn[k, i, j]), the weight rounded to 2 decimals (lines of equal opacity share one trace; below min_weight they
    are not drawn; beyond max_lines only the strongest are, so that a browser can draw it: the figure's
    layout.meta["hidden_lines"] counts the others). heads: which heads to draw (default all), one
    colour each. focus: index into tokens_left whose lines alone are drawn (Figure 4, bottom, for 'its').
    layout: "columns" (left and right columns, as in bertviz) or "rows" (top and bottom, as in the paper).
    """
    attn = np.asarray(attn, dtype=float)
    H, T, S = attn.shape
    if len(tokens_left) != T or len(tokens_right) != S:
        raise ValueError(f"attention is {T}x{S} but there are {len(tokens_left)} left and "
                         f"{len(tokens_right)} right tokens")
    heads = list(range(H)) if heads is None else [int(k) for k in heads]
    colors = colors or head_colors(H)
    rows_mode = layout == "rows"
    labels_left, labels_right = tick_labels(tokens_left), tick_labels(tokens_right)      # escaped, bytes shown

    def pos(side: int, i):                   # side 0: query copy, 1: key copy -> (x, y) in plot units
        i = np.asarray(i, dtype=np.float32)           # float32: half the bytes sent to the browser
        return (i, np.full_like(i, 1 - side)) if rows_mode else (np.full_like(i, side), -i)

    rounded = np.round(attn, 2)
    keep = (rounded > 0) & (attn >= min_weight) & np.isin(np.arange(H), heads)[:, None, None]
    if focus is not None:
        keep &= (np.arange(T) == focus)[None, :, None]
    hidden = 0
    if keep.sum() > max_lines:               # e.g. an untrained model spreads its weight over every token
        cut = np.sort(attn[keep])[-max_lines]
        hidden = int(keep.sum() - (keep & (attn >= cut)).sum())
        keep &= attn >= cut
    fig = go.Figure()
    for k in heads:
        w = rounded[k]
        ii, jj = np.nonzero(keep[k])
        levels = w[ii, jj]
        for level in np.unique(levels):    # one trace per opacity level: few traces, fast to draw
            sel = levels == level
            (x0, y0), (x1, y1) = pos(0, ii[sel]), pos(1, jj[sel])
            gap = np.full(sel.sum(), np.nan, dtype=np.float32)
            opacity, line_width = line_style(level)
            fig.add_trace(go.Scatter(
                x=np.column_stack([x0, x1, gap]).ravel(), y=np.column_stack([y0, y1, gap]).ravel(),
                mode="lines", opacity=opacity, line=dict(color=colors[k % len(colors)], width=line_width),
                name=f"head {k + 1}", legendgroup=f"head {k + 1}", showlegend=False, hoverinfo="skip",
                meta=dict(head=k, weight=float(level))))
        fig.add_trace(go.Scatter(                          # the legend entry, at full colour
            x=[None], y=[None], mode="lines", line=dict(color=colors[k % len(colors)], width=4),
            name=f"head {k + 1}", legendgroup=f"head {k + 1}", showlegend=True, hoverinfo="skip"))
    # the two copies of the sentence, with the strongest links of each shown head on hover
    left_hover = []
    for i in range(T):
        parts = [f"{labels_left[i]} ({position(i)})"]
        for k in heads:
            top = np.argsort(-attn[k, i])[:2]
            parts.append(f"head {k + 1}: " + ", ".join(f"{labels_right[j]} {attn[k, i, j]:.2f}" for j in top))
        left_hover.append("<br>".join(parts))
    notes = []
    for side, toks, hover in [(0, labels_left, left_hover), (1, labels_right, None)]:
        px, py = pos(side, np.arange(len(toks)))
        text = [f"<b>{t}</b>" if side == 0 and i == focus else t for i, t in enumerate(toks)]
        ink = ["crimson" if side == 0 and i == focus else "#222" for i in range(len(toks))]
        size = label_font(max(T, S)) + 1
        fig.add_trace(go.Scatter(
            x=px, y=py, mode="markers" if rows_mode else "markers+text",
            text=text, textposition="middle left" if side == 0 else "middle right", textfont=dict(size=size, color=ink),
            marker=dict(size=6, color=["crimson" if c == "crimson" else "#888" for c in ink]), showlegend=False,
            hovertext=hover or [f"{t} ({position(i)})" for i, t in enumerate(toks)], hoverinfo="text",
            meta=dict(tokens=side)))
        if rows_mode:                           # the paper writes the words vertically, above and below
            # set all at once below: fig.add_annotation in a loop copies the list each time (seconds per figure)
            notes += [dict(x=float(x), y=float(y), text=t, textangle=-90, showarrow=False,
                           font=dict(size=size, color=c), xanchor="center",
                           yanchor="bottom" if side == 0 else "top", yshift=6 if side == 0 else -6)
                      for x, y, t, c in zip(px, py, text, ink)]
    if notes:
        fig.update_layout(annotations=notes)
    n = max(T, S)
    if rows_mode:
        fig.update_xaxes(range=[-1, n], visible=False)
        fig.update_yaxes(range=[-1.1, 2.1], visible=False)
        height, width = 480, max(600, n * 22 + 200)
    else:
        fig.update_xaxes(range=[-0.9, 1.9], visible=False)
        fig.update_yaxes(range=[-n + 0.5, 0.8], visible=False)
        height, width = max(300, n * 22 + 110), 760
    # the title wraps to the figure's width (an exported file has no page around it to spill into); the
    # legend says only "heads": how to use it is the page's business, not a printed figure's
    title = fit_title(safe(title), width - 130)              # the legend takes ~130 px on the right
    more = title.count("<br>")                               # extra title lines
    fig.update_layout(meta=dict(hidden_lines=hidden), title=dict(text=title, x=0.0, xanchor="left", xref="container"),
                      height=height + 20 * more, width=width, plot_bgcolor="white",
                      margin=dict(l=10, r=10, t=50 + 22 * more, b=10), hovermode="closest",
                      legend=dict(title="heads", itemsizing="constant"))
    return fig
