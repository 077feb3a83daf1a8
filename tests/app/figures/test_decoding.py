"""The figures of "How it writes", built from a tiny model's trace."""
import numpy as np
import pytest

import core
from app.figures.decoding import (OTHER, beam_tree_figure, candidates_figure, piece_label, source_strip_figure)
from tests.helpers import tiny_model


@pytest.fixture(scope="module")
def trace(tokenizer):
    tm = core.TranslationModel(tiny_model(len(tokenizer), seed=5), tokenizer)
    return tm.trace("the quick brown fox jumps over the lazy dog", beam=3)


def test_piece_labels_read_as_words():
    assert [piece_label(p) for p in ["▁Haus", "hlt", ",", "</s>", "<0x41>"]] == ["Haus", "-hlt", ",", "(end)", "-A"]


def test_candidates_are_a_distribution(trace):
    fig = candidates_figure(trace, 1, 0)
    bar = fig.data[0]
    assert list(bar.y)[-1] == OTHER and len(bar.y) == len(trace.steps[1].hyps[0].candidates) + 1
    assert sum(bar.x) == pytest.approx(1, abs=1e-4)
    hot = candidates_figure(trace, 1, 0, temperature=3.0).data[0]
    assert sum(hot.x) == pytest.approx(1, abs=1e-3) and hot.x[0] < bar.x[0]      # flatter: the favourite loses
    assert "temperature 3" in candidates_figure(trace, 1, 0, temperature=3.0).layout.xaxis.title.text


def test_the_tree_draws_every_hypothesis(trace):
    fig = beam_tree_figure(trace, step=2, window=5)
    nodes = [t for t in fig.data if t.mode == "markers+text"]
    assert sum(len(t.x) for t in nodes) == sum(len(s.hyps) for s in trace.steps[1:])
    winner = next(t for t in nodes if "winner" in t.name)
    assert len(winner.x) == len(trace.search.path()) - 1            # the way, without the start
    stars = fig.data[-1]
    assert len(stars.x) == len(trace.search.finished)
    assert fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0] == 5


def test_source_strip(trace):
    words, _ = trace.source_words()
    weights = trace.cross_over_words(trace.steps[0].hyps[0].cross.mean((0, 1)))
    fig = source_strip_figure(words, weights, "where")
    assert list(fig.data[0].x)[:3] == words[:3] and "the (2)" in fig.data[0].x and fig.data[0].x[-1] == "&lt;/s&gt;"
    assert np.isclose(np.sum(fig.data[0].z), 1, atol=1e-5)
