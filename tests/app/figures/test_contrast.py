"""app.figures.contrast on small arrays: one strip per row over the same words, pushes on a colour scale centred
on zero, the attention of the head asked for."""
import numpy as np
import pytest

from app.figures.contrast import attention_of, contrast_figure

WORDS = ["The", "bank", "raised", "its", "rates", "the"]


def test_pushes_beside_attention_over_the_same_words():
    scores = np.array([0.1, 2.0, -0.5, 0.3, 0.0, -0.1])
    attention = np.array([0.05, 0.1, 0.05, 0.6, 0.1, 0.1])
    fig = contrast_figure(WORDS, scores, attention, "ihre", "seine", "erasure", "attention (mean)")
    push, look = fig.data
    assert list(push.x) == list(look.x) and len(set(push.x)) == len(WORDS)       # 'the' twice: two cells
    assert (push.zmin, push.zmax) == (-2.0, 2.0)                                  # white is zero
    assert (look.zmin, look.zmax) == (0, pytest.approx(0.6))
    assert list(push.text[0]) == ["+0.10", "+2.00", "-0.50", "+0.30", "+0.00", "-0.10"]
    assert "'ihre'" in fig.layout.annotations[0].text and "'seine'" in fig.layout.annotations[0].text


def test_earlier_target_words_get_a_third_strip_on_the_same_scale():
    fig = contrast_figure(WORDS, np.zeros(6), np.ones(6) / 6, "a", "b", "gradient", "x", ["Die", "Bank"],
                          np.array([3.0, -1.0]))
    assert len(fig.data) == 3 and list(fig.data[2].x) == ["Die", "Bank"]
    assert fig.data[0].zmax == fig.data[2].zmax == 3.0


def test_attention_of_a_head_or_the_means():
    cross = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    row, label = attention_of(cross)
    np.testing.assert_allclose(row, cross.mean((0, 1)))
    assert "mean of all layers" in label and "mean of the heads" in label
    row, label = attention_of(cross, 1, 2)
    np.testing.assert_allclose(row, cross[1, 2])
    assert "layer 2" in label and "head 3" in label


def test_every_word_is_labelled_and_numbers_can_be_left_out():
    fig = contrast_figure(WORDS, np.ones(6), np.ones(6) / 6, "a", "b", "erasure", "x", numbers=False)
    assert all(t.texttemplate == "" for t in fig.data)
    assert list(fig.layout.xaxis2.tickvals) == list(fig.data[1].x) and len(fig.layout.xaxis2.tickvals) == 6
    assert contrast_figure(WORDS, np.ones(6), np.ones(6) / 6, "a", "b", "erasure", "x").data[0].texttemplate
