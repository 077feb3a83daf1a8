"""The Syntax tab's and Figure 5's builders: the heads x relations grid, a sentence's arcs, the words on Figure 5."""
import numpy as np
import pandas as pd
import pytest

from app.figures.paper import describe_figure5_head, figure5_best, figure5_layer_note
from app.figures.syntax import FOLLOWED, MISSED, arcs_figure, syntax_grid

ROWS = [{"relation": "det", "direction": "dep->head", "baseline": 40.0, "layer": 2, "head": 1, "syntactic": True},
        {"relation": "nsubj", "direction": "head->dep", "baseline": 30.0, "layer": 1, "head": 2, "syntactic": False}]


def test_grid_is_heads_by_relations_minus_the_baseline_with_the_chosen_heads_boxed():
    det, nsubj = np.array([[10.0, 20.0], [55.0, 0.0]]), np.array([[25.0, 35.0], [30.0, 30.0]])
    fig = syntax_grid({("det", "dep->head"): det, ("nsubj", "head->dep"): nsubj}, ROWS)
    heat = fig.data[0]
    assert list(heat.y) == ["L1 H1", "L1 H2", "L2 H1", "L2 H2"]
    assert list(heat.x) == ["det dep-&gt;head", "nsubj head-&gt;dep"]
    np.testing.assert_allclose(heat.z[:, 0], det.ravel() - 40)
    np.testing.assert_allclose(heat.z[:, 1], nsubj.ravel() - 30)
    boxes = [b for b in fig.layout.shapes if b.type == "rect"]
    assert [(b.x0 + 0.5, b.y0 + 0.5, b.line.width) for b in boxes] == [(0, 2, 3), (1, 1, 1)]   # syntactic: thick
    with pytest.raises(ValueError, match="more sentences"):
        syntax_grid({}, [])


def test_arcs_figure_colours_the_heads_links_by_the_gold_partner():
    words = ["The", "dog", "barks"]
    gold = [(0, 1, "det"), (1, 2, "nsubj")]
    fig = arcs_figure(words, gold, [(0, 1), (1, 0), (2, 1)], "det", "dep->head", "layer 1, head 1")
    assert fig.layout.meta == {"followed": 1, "asked": 1}
    lines = [t for t in fig.data if t.mode == "lines" and t.xaxis == "x2"]           # the head's arcs, below
    assert [t.line.color for t in lines][0] == FOLLOWED
    fig = arcs_figure(words, gold, [(0, 2), (1, 0), (2, 0)], "nsubj", "head->dep")   # barks should look at dog
    lines = [t for t in fig.data if t.mode == "lines" and t.xaxis == "x2"]
    assert fig.layout.meta == {"followed": 0, "asked": 1} and lines[2].line.color == MISSED
    assert arcs_figure(words, gold, [(0, 1), (1, 2), (2, 0)]).layout.meta["followed"] == 2   # any gold arc
    with pytest.raises(ValueError):
        arcs_figure([], [], [])


def _arcs(layers):
    return pd.DataFrame([{"layer": layer, "head": h, "score": s, "followed": f, "arcs": 8, "relation": "det",
                          "direction": "dep->head", "relation_followed": f, "relation_arcs": 2,
                          "links": [(0, 1, "det", "dep->head")]} for layer, h, s, f in layers])


def test_figure5_words_name_the_relation_and_say_where_the_best_heads_are():
    arcs = _arcs([(1, 0, 0.5, 4), (3, 2, 0.25, 2), (4, 1, 0.125, 1), (0, 0, 0.0, 0)])
    best = figure5_best(arcs)
    assert list(best["layer"]) == [1, 3]
    text = describe_figure5_head(best.iloc[0], ["The", "Law"])
    assert "Layer 2, head 1" in text and "det dep->head" in text and "'The' → 'Law'" in text
    note = figure5_layer_note(best, arcs)
    assert "not in layer 5" in note and "layer 2 and layer 4" in note and "head 2" in note
    assert figure5_layer_note(_arcs([(4, 0, 0.5, 4), (4, 1, 0.4, 3)]), arcs) == \
        "Both best heads are in layer 5, as in the paper."
    with pytest.raises(ValueError, match="no head"):
        figure5_best(_arcs([(0, 0, 0.0, 0)]))
