"""app.figures.toy: the cross-attention grid of the live toy training and its loss curve."""
import numpy as np
import pytest

from app.figures import toy
from app.figures.style import readable, sizes

COLUMN_PX = 480         # the grid's column on the Watch it learn page at 1280x720 (3/5 of the page beside the loss)
CHAR_EM, LINE_EM = 0.58, 1.3     # a generous mean width of a character; Plotly's spacing of lines


def test_cross_grid_has_a_map_per_head_with_the_target_cells_outlined():
    n = 5
    cross = np.full((2, 2, n + 1, n + 1), 1 / (n + 1))
    hits = np.array([[0.2, 1.0], [0.0, 0.4]])
    fig = toy.cross_grid(cross, "reverse", "31859", hits, "step 10")
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    outlines = [t for t in fig.data if t.type == "scatter"]
    assert len(heatmaps) == len(outlines) == 4
    assert list(outlines[0].x) == [4, 3, 2, 1, 0] and list(outlines[0].y) == [0, 1, 2, 3, 4]   # the anti-diagonal
    titles = [a.text for a in fig.layout.annotations]
    assert titles[1] == "layer 1, head 2:<br>5 of 5 on target" and titles[2].startswith("layer 2, head 1:<br>0 of 5")
    assert list(fig.layout.xaxis.ticktext) == ["3", "1", "8", "5", "9", "&lt;/s&gt;"]
    assert list(fig.layout.yaxis.ticktext) == ["9", "5", "8", "1", "3", "&lt;/s&gt;"]


def test_copy_outlines_the_diagonal_and_texts_say_who_and_how_far():
    fig = toy.cross_grid(np.zeros((1, 1, 4, 4)), "copy", "123", np.zeros((1, 1)), "t")
    assert list(fig.data[1].x) == [0, 1, 2]
    assert toy.progress_text(120, 600, 6.2, "Ms Smith", True, None) == \
        "Started by Ms Smith · step 120 of 600 · 6 s · training"
    assert "stopped" in toy.progress_text(120, 600, 6.2, "Ms Smith", False, "stop")
    assert toy.guess_text("reverse", "123", "3·1").startswith("123 → 321 · the model writes 3·1 (2 of 3 right")


def test_loss_figure_shows_the_floor():
    fig = toy.loss_figure([10, 20], [2.0, 1.0], 0.5, 600)
    assert list(fig.data[0].y) == [2.0, 1.0] and fig.layout.xaxis.range == (0, 600)
    assert fig.layout.shapes[0].y0 == 0.5


def grid(presenter: bool, n_layers: int = 2, h: int = 2, digits: str = "31859264"):
    n = len(digits)
    cross = np.full((n_layers, h, n + 1, n + 1), 1 / (n + 1))
    hits = np.linspace(0, 1, n_layers * h).reshape(n_layers, h)
    return readable(toy.cross_grid(cross, "reverse", digits, hits, "step 600"), presenter)


def extent(fig, a) -> tuple[float, float, float, float]:
    """(left, right, top, bottom) of a subplot title in px of a COLUMN_PX-wide figure, from its font size and lines."""
    m, lines = fig.layout.margin, a.text.split("<br>")
    w, h = COLUMN_PX - m.l - m.r, fig.layout.height - m.t - m.b
    half = max(len(line) for line in lines) * CHAR_EM * a.font.size / 2
    bottom = m.t + (1 - a.y) * h                                             # yanchor bottom, at its map's top
    return m.l + a.x * w - half, m.l + a.x * w + half, bottom - len(lines) * LINE_EM * a.font.size, bottom


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("n_layers, h", [(2, 2), (3, 2), (1, 2)])
def test_head_titles_stay_apart_side_by_side_and_from_the_labels_above(presenter, n_layers, h):
    fig = grid(presenter, n_layers, h)
    s = sizes(presenter)
    notes = fig.layout.annotations
    assert len(notes) == n_layers * h
    boxes = [extent(fig, a) for a in notes]
    for row in range(n_layers):
        line = sorted(boxes[row * h:(row + 1) * h])
        assert all(a[1] + 4 <= b[0] for a, b in zip(line, line[1:])), line       # side by side, apart
        assert line[0][0] >= 0 and line[-1][1] <= COLUMN_PX, line               # and inside the figure
        top = line[0][2]
        if row == 0:                                                            # under the figure's title
            assert top >= 10 + LINE_EM * s["title"], top
        else:                                                                   # under the maps above and their labels
            name = f"yaxis{(row - 1) * h + 1 if row > 1 else ''}"
            above = fig.layout.margin.t + (1 - fig.layout[name].domain[0]) * (fig.layout.height - fig.layout.margin.t
                                                                                - fig.layout.margin.b)
            assert top - above >= 4 * CHAR_EM * s["tick"], (top, above)          # "</s>" turned on end fits
