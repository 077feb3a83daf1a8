"""app.figures.sdpa.matrix_figure: a title of one, two or three lines sits inside the figure, at the same place, and
above the column labels, on a screen and in presenter mode."""
import re

import numpy as np
import pytest

from app.figures import sdpa
from app.figures.export import export_problem, figure_bytes
from app.figures.style import readable, sizes

TITLES = {1: "4. Output: weights × V", 2: "3. Softmax of each row: weights",
          3: "A much longer title for the matrix that wraps onto three lines"}
CAP, LINE, DESCENT = 0.7, 1.3, 0.3     # em: Plotly's baseline under a top anchor, line spacing; a descent


def matrix(lines: int, presenter: bool):
    fig = readable(sdpa.matrix_figure(np.eye(2), TITLES[lines], ["query 1", "query 2"], ["key 1", "key 2"]), presenter)
    assert fig.layout.title.text.count("<br>") + 1 == lines
    return fig


def first_baseline(fig) -> float:
    """Pixels from the figure's top to the title's first baseline, as Plotly places it: the anchor (yref container,
    yanchor top, pad) plus the cap height for a one-line title; each line of a longer one gets the anchor's y."""
    t = fig.layout.title
    anchor = fig.layout.height * (1 - t.y) + t.pad.t
    return anchor + (CAP * t.font.size if "<br>" not in t.text else 0.0)


@pytest.mark.parametrize("presenter", [False, True])
def test_a_title_of_several_lines_starts_where_a_one_line_title_does(presenter):
    one = matrix(1, presenter)
    size = one.layout.title.font.size
    assert first_baseline(one) == pytest.approx(one.layout.title.pad.t + CAP * size)
    for lines in (2, 3):
        fig = matrix(lines, presenter)
        assert fig.layout.title.font.size == size
        # its letters inside the figure (to half a pixel: presenter mode rounds the height it grows by half)
        assert first_baseline(fig) == pytest.approx(first_baseline(one), abs=0.5), lines


@pytest.mark.parametrize("presenter", [False, True])
@pytest.mark.parametrize("lines", [1, 2, 3])
def test_the_top_margin_holds_every_line_and_the_column_labels_under_them(lines, presenter):
    fig = matrix(lines, presenter)
    size = fig.layout.title.font.size
    tick = sizes(presenter)["tick"]                                             # the column labels' type
    title_bottom = first_baseline(fig) + (LINE * (lines - 1) + DESCENT) * size
    assert fig.layout.xaxis.side == "top"
    assert title_bottom + 1.5 * tick <= fig.layout.margin.t                     # a label's height and a gap


@pytest.mark.slow
@pytest.mark.skipif(export_problem(True) is not None, reason="kaleido cannot draw here")
def test_the_drawn_first_line_is_a_cap_height_below_the_top():
    fig = matrix(2, False)
    svg = figure_bytes(fig, "svg").decode()
    first = re.search(r'<text class="gtitle"[^>]*>\s*<tspan class="line"[^>]*\by="([\d.]+)"', svg)
    assert first, svg[:500]
    assert float(first.group(1)) >= CAP * fig.layout.title.font.size     # the letters' tops below y = 0
