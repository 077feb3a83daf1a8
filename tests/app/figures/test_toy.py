"""app.figures.toy: the cross-attention grid of the live toy training and its loss curve."""
import numpy as np

from app.figures import toy


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
    assert titles[1] == "layer 1, head 2: 5 of 5 on target" and titles[2].startswith("layer 2, head 1: 0 of 5")
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
