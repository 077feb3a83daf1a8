"""The pure attention figure builders (app/figures/attention.py) on small hand-made maps."""
import numpy as np
import pytest

from app.figures.attention import (LINE_WIDTH, head_colors, head_view_figure, heatmap_figure, line_style,
                                   model_view_figure)
from app.figures.style import readable
from app.figures.tokens import safe, tick_angle


def rows_summing_to_one(*shape, seed=0):
    """Random attention maps: non-negative, each row sums to 1, deliberately uneven."""
    x = np.random.default_rng(seed).gamma(0.3, size=shape)
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


SRC = ["▁the", "▁cat", "▁saw", "▁the", "▁do", "g", "</s>"]
TGT = ["<s>", "▁die", "▁Kat", "ze", "▁sah"]


def test_heatmap_scale_starts_at_zero_and_keeps_repeated_tokens_apart():
    attn = rows_summing_to_one(7, 7)
    fig = heatmap_figure(attn, SRC, SRC, title="t")
    hm = fig.data[0]
    assert hm.zmin == 0.0 and hm.zmax == pytest.approx(attn.max())
    # "▁the" appears twice: it still gets two rows and two columns, each labelled "▁the"
    assert len(set(hm.x)) == len(set(hm.y)) == 7 and list(fig.layout.xaxis.tickvals) == list(hm.x)
    assert list(fig.layout.xaxis.ticktext) == SRC[:6] + ["&lt;/s&gt;"] == list(fig.layout.yaxis.ticktext)
    np.testing.assert_allclose(np.asarray(hm.z), attn, rtol=1e-6)
    # hover names both tokens (with their positions) and the weight
    assert hm.y[3] == "▁the (4)" and hm.x[1] == "▁cat (2)"
    assert "%{y}" in hm.hovertemplate and "%{x}" in hm.hovertemplate and "%{z" in hm.hovertemplate


def test_heatmap_of_a_rectangular_map_on_a_fixed_scale():
    fig = heatmap_figure(rows_summing_to_one(5, 7), TGT, SRC, zmax=1.0)
    assert len(fig.layout.yaxis.ticktext) == 5 and len(fig.layout.xaxis.ticktext) == 7
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)


def test_column_labels_stay_level_where_they_fit_and_turn_where_not():
    words = ["A", "man", "is", "on", "a", "ladder", ".", "</s>"]
    assert heatmap_figure(np.eye(8), words, words).layout.xaxis.tickangle == 0          # a class reads them level
    long = [f"extraordinarily{i}" for i in range(12)]
    assert heatmap_figure(np.eye(12), long, long).layout.xaxis.tickangle == -45           # slanted, still apart
    many = [f"word{i}" for i in range(40)]
    assert heatmap_figure(np.eye(40), many, many).layout.xaxis.tickangle == -90           # too close to slant
    assert tick_angle(["standing"] * 12, 540, 13) == -45 and tick_angle(["standing"] * 12, 1200, 13) == 0
    # presenter mode's larger text needs more room: what fits level on a laptop may turn on a projector
    seven = ["▁machine", "▁learning", "▁is", "▁not", "▁magic", "▁at", "▁all"]
    assert heatmap_figure(np.eye(7), seven, seven).layout.xaxis.tickangle == 0
    assert heatmap_figure(np.eye(7), seven, seven, text_scale=1.5).layout.xaxis.tickangle != 0
    # room below the plot follows the angle: level labels need less of it
    level, slanted = heatmap_figure(np.eye(8), words, words), heatmap_figure(np.eye(12), long, long)
    assert level.layout.margin.b < slanted.layout.margin.b



def cells_height(fig) -> float:
    """The height of a heatmap's cells: the figure's less its top and bottom margins."""
    return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b


def test_a_page_may_give_a_row_fewer_pixels_but_never_too_few_to_read():
    words = [f"w{i}" for i in range(12)]
    usual, capped = heatmap_figure(np.eye(12), words, words), heatmap_figure(np.eye(12), words, words, row_px=22)
    assert cells_height(usual) - cells_height(capped) == 12 * (28 - 22)     # 28 px a row unless a page says less
    assert capped.layout.margin == usual.layout.margin                      # labels and titles keep their room
    floor = heatmap_figure(np.eye(12), words, words, row_px=14)
    assert cells_height(heatmap_figure(np.eye(12), words, words, row_px=5)) == cells_height(floor)
    many = [f"w{i}" for i in range(40)]                                     # a long map's rows are thinner anyway
    assert cells_height(heatmap_figure(np.eye(40), many, many, row_px=22)) == cells_height(
        heatmap_figure(np.eye(40), many, many))

def test_labels_are_escaped_so_plotly_shows_them_literally():
    assert safe("</s>") == "&lt;/s&gt;" and safe("a<b>b") == "a&lt;b&gt;b" and safe("R&D") == "R&amp;D"


def test_model_view_places_every_head_in_its_tile():
    maps = rows_summing_to_one(3, 4, 5, 6)
    fig = model_view_figure(maps, TGT, SRC[:6], selected=(2, 1))
    hm, targets = fig.data[0], fig.data[1]
    z = np.asarray(hm.z)
    gap = (z.shape[1] - 4 * 6) // 3
    assert z.shape == (3 * 5 + 2 * gap, 4 * 6 + 3 * gap)
    for layer in range(3):
        for h in range(4):
            r0, c0 = layer * (5 + gap), h * (6 + gap)
            np.testing.assert_allclose(z[r0:r0 + 5, c0:c0 + 6], maps[layer, h])
    assert fig.layout.coloraxis.cmin == 0.0 and fig.layout.coloraxis.cmax == pytest.approx(maps.max())
    # every (layer, head) can be clicked, and the selected one is framed
    assert {tuple(c) for c in np.asarray(targets.customdata).tolist()} == {(i, h) for i in range(3) for h in range(4)}
    (rect,) = fig.layout.shapes
    assert rect.x0 < 1 * (6 + gap) < rect.x1 < 2 * (6 + gap) and rect.y0 < 2 * (5 + gap) < rect.y1
    assert list(fig.layout.yaxis.ticktext) == ["layer 1", "layer 2", "layer 3"]
    assert model_view_figure(maps, TGT, SRC[:6], zmax=1.0).layout.coloraxis.cmax == 1.0


def _segments(fig):
    """(head, i, j, opacity, width) for every line drawn by head_view_figure in the 'columns' layout."""
    out = []
    for tr in fig.data:
        if tr.mode != "lines" or tr.meta is None:
            continue
        x, y = np.asarray(tr.x, dtype=float), np.asarray(tr.y, dtype=float)
        for k in range(0, len(x), 3):
            assert x[k] == 0 and x[k + 1] == 1 and np.isnan(x[k + 2])
            out.append((tr.meta["head"], int(-y[k]), int(-y[k + 1]), tr.opacity, tr.line.width))
    return out


def test_head_view_lines_grow_bolder_with_the_weight():
    attn = rows_summing_to_one(3, 5, 7)
    fig = head_view_figure(TGT, SRC, attn, min_weight=0.0)
    segs = _segments(fig)
    drawn = {(k, i, j) for k, i, j, _, _ in segs}
    for k, i, j, opacity, width in segs:
        assert (opacity, width) == line_style(round(float(attn[k, i, j]), 2))
    # both opacity and width rise with the weight, and a middling weight is not drawn pale
    ranked = sorted(segs, key=lambda s: attn[s[0], s[1], s[2]])
    for column in (3, 4):                                      # opacity, width
        assert [s[column] for s in ranked] == sorted(s[column] for s in ranked)
    assert ranked[-1][4] > 2 * ranked[0][4]
    assert line_style(0.25)[0] >= 0.5 and line_style(1.0) == (1.0, LINE_WIDTH[1]) and line_style(0.0)[0] == 0.0
    # every weight that rounds to at least 0.01 is drawn, once
    assert len(segs) == len(drawn) == int((np.round(attn, 2) > 0).sum())
    # one full-colour legend entry per head
    legend = [tr for tr in fig.data if tr.showlegend]
    assert [tr.name for tr in legend] == ["head 1", "head 2", "head 3"]
    assert [tr.line.color for tr in legend] == head_colors(3)


def test_presenter_mode_draws_the_head_views_lines_wider():
    fig = head_view_figure(TGT, SRC, rows_summing_to_one(1, 5, 7), min_weight=0.0)
    big = readable(fig, presenter=True)
    pairs = [(a.line.width, b.line.width) for a, b in zip(fig.data, big.data) if a.mode == "lines"]
    assert pairs and all(b == pytest.approx(1.5 * a, abs=0.01) for a, b in pairs)


def test_head_view_focus_heads_and_thresholds():
    attn = rows_summing_to_one(4, 5, 7)
    segs = _segments(head_view_figure(TGT, SRC, attn, heads=[1, 3], focus=2, min_weight=0.0))
    assert segs and {i for _, i, _, _, _ in segs} == {2} and {k for k, _, _, _, _ in segs} == {1, 3}
    segs = _segments(head_view_figure(TGT, SRC, attn, min_weight=0.2))
    assert segs and all(attn[k, i, j] >= 0.2 for k, i, j, _, _ in segs)
    fig = head_view_figure(TGT, SRC, attn, min_weight=0.0, max_lines=10)
    segs = _segments(fig)
    strongest = np.sort(attn.ravel())[-10:]
    assert len(segs) == 10 and min(attn[k, i, j] for k, i, j, _, _ in segs) >= strongest[0]
    assert fig.layout.meta["hidden_lines"] == int((np.round(attn, 2) > 0).sum()) - 10
    # the focused token is highlighted, and both sentences are written out (escaped)
    fig = head_view_figure(TGT, SRC, attn, focus=2)
    left = [tr for tr in fig.data if tr.meta and tr.meta.get("tokens") == 0][0]
    assert left.text[2] == "<b>▁Kat</b>" and left.text[0] == "&lt;s&gt;"
    # hover names each token with its position counted from 1, as the heatmap does
    right = [tr for tr in fig.data if tr.meta and tr.meta.get("tokens") == 1][0]
    assert left.hovertext[0].startswith("&lt;s&gt; (1)<br>head 1: ") and left.hovertext[2].startswith("▁Kat (3)")
    assert list(right.hovertext) == [f"{t} ({j + 1})" for j, t in enumerate(SRC[:-1] + ["&lt;/s&gt;"])]
    with pytest.raises(ValueError, match="tokens"):
        head_view_figure(TGT, SRC[:-1], attn)


def test_head_view_rows_layout_writes_words_vertically():
    attn = rows_summing_to_one(2, 7, 7)
    fig = head_view_figure(SRC, SRC, attn, layout="rows")
    assert len(fig.layout.annotations) == 14 and all(a.textangle == -90 for a in fig.layout.annotations)
    for tr in fig.data:
        if tr.mode == "lines" and tr.meta is not None:
            y = np.asarray(tr.y, dtype=float)
            assert set(y[~np.isnan(y)]) <= {0.0, 1.0}      # from the top copy to the bottom one
