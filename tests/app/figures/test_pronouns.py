"""app.figures.pronouns.form_figure: its probability axis reads without repeated tick labels, however small the
probabilities (a model sure of another word gives every form ~0)."""
import re

import numpy as np
import pandas as pd
import pytest

from app.figures.export import export_problem, figure_bytes
from app.figures.pronouns import form_figure
from core.studies.pronouns import POSSESSIVES

TOPS = [0.0, 0.004, 0.03, 0.2, 0.55, 0.97]          # the most probable form's probability


def table(top: float) -> pd.DataFrame:
    p = np.linspace(top, 0.0, len(POSSESSIVES))
    return pd.DataFrame({"form": POSSESSIVES, "probability": p, "chosen": p == p.max()})


def tick_labels(yaxis) -> list[str]:
    """The labels of a linear axis from 0 to its range's end, as d3 writes them (Python's format agrees on .N%)."""
    count = int(yaxis.range[1] / yaxis.dtick + 1e-9) + 1
    return [format(yaxis.tick0 + k * yaxis.dtick, yaxis.tickformat.lstrip(",")) for k in range(count)]


@pytest.mark.parametrize("top", TOPS)
def test_probability_ticks_are_distinct_and_span_the_axis(top):
    y = form_figure(table(top), "ihre", True).layout.yaxis
    assert y.range[0] == 0 and y.range[1] >= top
    labels = tick_labels(y)
    assert 3 <= len(labels) <= 11 and len(set(labels)) == len(labels), labels


@pytest.mark.slow
@pytest.mark.skipif(export_problem(True) is not None, reason="kaleido cannot draw here")
def test_the_drawn_probability_axis_repeats_no_label():
    """What Plotly draws: every y tick label of the figure of forms with probability 0 (the case seen in a handout)."""
    svg = figure_bytes(form_figure(table(0.0), "ihre", True), "svg").decode()
    labels = re.findall(r'<g class="ytick"><text[^>]*>([^<]*)</text>', svg)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
