"""app.figures.sdpa's builders for the walk through a real head: tables whose columns add up, and the bar chart."""
import numpy as np
import pytest

from app.figures import sdpa
from core.studies.step_by_step import walk

SRC = "a man in a blue shirt is standing on a ladder"


@pytest.fixture(scope="module")
def steps(translation_model):
    from core.studies.step_by_step import capture
    return capture(translation_model, SRC, "ein Mann in einem blauen Hemd", kind="dec_self", layer=0)


def test_labels_are_unique_and_readable():
    labels = sdpa.token_labels(["▁a", "▁man", "▁a", "</s>", "ing"])
    assert labels == ["a (1)", "man (2)", "a (3)", "</s> (4)", "ing (5)"]


def test_keys_table_splits_each_dot_product_into_the_shown_dimensions_and_the_rest(steps):
    w = walk(steps, head=1, row=4, n_shown=3)
    cols = sdpa.token_labels(steps.cols)
    t = sdpa.keys_table(w, cols)
    assert len(t) == 5 and t.key.tolist() == cols[:5]                   # step 5 may read 5 tokens, not the rest
    assert list(t.columns[1:4]) == ["k1", "k2", "k3"]
    d_k = steps.d_k
    np.testing.assert_allclose(t["q·k from dims 1-3"] + t[f"+ dims 4-{d_k}"], t["= q·k"])
    np.testing.assert_allclose(t[f"÷ √{d_k}"] * np.sqrt(d_k), t["= q·k"])
    assert t["softmax weight"].sum() == pytest.approx(1.0)


def test_values_table_ends_with_the_output(steps):
    w = walk(steps, head=0, row=6, n_shown=4)
    t = sdpa.values_table(w, sdpa.token_labels(steps.cols), top=3)
    assert t.key.iloc[-2] == "the other 4 keys" and t.key.iloc[-1] == "= output (sum)"
    parts = t.iloc[:-1, 2:].to_numpy()
    np.testing.assert_allclose(parts.sum(0), w.output[:4])               # the rows add up to the output
    assert t.weight.iloc[:-1].sum() == pytest.approx(1.0)
    assert list(t.weight.iloc[:3]) == sorted(t.weight.iloc[:3], reverse=True)


def test_walk_figure_draws_the_allowed_keys_and_marks_the_heaviest(steps):
    w = walk(steps, head=0, row=2)
    fig = sdpa.walk_figure(w, sdpa.token_labels(steps.cols), "t")
    scores, weights = fig.data
    assert len(scores.x) == len(weights.x) == 3
    np.testing.assert_allclose(weights.y, w.weights[:3])
    red = [c == "#d62728" for c in weights.marker.color]
    assert sum(red) == 1 and red.index(True) == int(np.argmax(w.weights))
    assert "√" in fig.layout.annotations[0].text
    end = sdpa.walk_figure(walk(steps, head=0, row=len(steps.rows) - 1), sdpa.token_labels(steps.cols), "</s>")
    assert end.data[0].x[0] == "&lt;s&gt; (1)" and end.layout.title.text == "&lt;/s&gt;"     # not markup


def test_vector_summary_writes_the_first_numbers_and_sums_up_the_rest():
    text = sdpa.vector_summary("q", np.array([1.0, -2.0, 0.5, 3.0, 4.0]), [0, 1])
    assert text.startswith("q = (1.00, -2.00, … ) and 3 more numbers, from 0.50 to 4.00")
    assert text.endswith("its length |q| = 5.50")          # sqrt(1 + 4 + 0.25 + 9 + 16)
