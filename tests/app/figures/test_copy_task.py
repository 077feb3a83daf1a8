"""app.figures.copy_task: Learn to copy's loss and induction-score panels and the best head's map."""
import numpy as np

from app.figures import copy_task as figs
from core.studies import copy_task
from core.studies.induction import scores_from_maps

L = 4
T = 2 * L + 1


def snapshot(step: int, best: float, loss: float | None = 3.0) -> copy_task.Snapshot:
    """A Snapshot of a 2-layer, 2-head model whose layer-2 head 1 scores `best`."""
    induction = np.array([[0.01, 0.03], [best, 0.02]])
    example = np.full((2, 2, T, T), 1 / T)
    return copy_task.Snapshot(step, step / 50, loss, induction, np.zeros((2, 2)), np.zeros((2, 2)), 3.6, 3.6 - best,
                              example, [0, 5, 9, 2, 30, 5, 9, 2, 30])


def traces(fig, name):
    return [t for t in fig.data if t.name == name]


def test_the_outlined_cells_are_the_induction_offsets():
    attn = np.zeros((T, T))
    fig = figs.head_map(attn, [0, 1, 2, 3, 4, 1, 2, 3, 4], 1, 2, 0.8, 300)
    cells = traces(fig, "induction cells")[0]
    assert list(cells.y) == [5, 6, 7, 8] and list(cells.x) == [2, 3, 4, 5]       # query i: key i - L + 1
    # a map with all its weight on those cells scores 1 as core's induction score, and 0 on the diagonal beside them
    perfect = np.zeros((1, 1, 1, T, T))
    perfect[..., cells.y, cells.x] = 1.0
    assert scores_from_maps(perfect, L).induction[0, 0] == 1.0
    shifted = np.zeros((1, 1, 1, T, T))
    shifted[..., cells.y, cells.x - 1] = 1.0
    assert scores_from_maps(shifted, L).induction[0, 0] == 0.0
    assert fig.layout.title.text == "Layer 2, head 3 at step 300: induction score 0.80"
    assert list(fig.layout.xaxis.ticktext) == ["&lt;s&gt;", "A", "B", "C", "D", "A", "B", "C", "D"]


def test_tokens_are_named_as_tiny_copys_tokenizer_names_them():
    import json

    from core.paths import REPO
    vocab = json.loads((REPO / "checkpoints" / "tiny-copy" / "tokenizer.json").read_text())["model"]["vocab"]
    assert all(copy_task.token_name(i) == name for name, i in vocab.items())
    assert copy_task.token_name(len(vocab) + 5) == str(len(vocab) + 5)       # past the names: the id


def test_the_phase_change_is_marked_at_phase_changes_step():
    snaps = [snapshot(0, 0.05, None), snapshot(25, 0.1), snapshot(50, 0.45), snapshot(75, 0.62), snapshot(100, 0.8)]
    fig = figs.training_figure(snaps, 0.5, 600)
    want = copy_task.phase_change(snaps, 0.5).step
    assert want == 75
    marks = [s for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]
    assert [m.x0 for m in marks] == [75, 75]                                  # on both panels
    assert any(a.text == "phase change: step 75" for a in fig.layout.annotations)
    score = traces(fig, "induction score")[0]
    assert list(score.x) == [0, 25, 50, 75, 100] and list(score.y) == [0.05, 0.1, 0.45, 0.62, 0.8]
    loss = traces(fig, "training loss")[0]
    assert list(loss.x) == [25, 50, 75, 100]                                   # step 0 has no training loss
    threshold = [s for s in fig.layout.shapes if s.y0 == s.y1]
    assert [t.y0 for t in threshold] == [0.5]
    assert fig.layout.xaxis2.range == (0, 600)
    # a higher threshold moves the mark with phase_change
    assert [s.x0 for s in figs.training_figure(snaps, 0.7, 600).layout.shapes if s.x0 == s.x1] == [100, 100]


def test_a_run_with_no_phase_change_marks_none():
    snaps = [snapshot(0, 0.05, None), snapshot(25, 0.2), snapshot(50, 0.3)]
    fig = figs.training_figure(snaps, 0.5, 600)
    assert not [s for s in fig.layout.shapes if s.x0 == s.x1]
    assert not any("phase change" in (a.text or "") for a in fig.layout.annotations)


def test_no_snapshots_yet_draws_empty_panels():
    fig = figs.training_figure([], 0.5, 600)
    assert all(len(t.x) == 0 for t in fig.data)
    assert fig.layout.yaxis.range == (0, 4.2)                                # a loss axis with room for the start


def test_every_head_has_a_map_titled_with_its_score():
    s = snapshot(100, 0.8)
    fig = figs.heads_grid(s.example, s.induction)
    assert len([t for t in fig.data if t.type == "heatmap"]) == 4
    assert len(traces(fig, "induction cells")) == 4
    assert [a.text for a in fig.layout.annotations] == ["layer 1, head 1: 0.01", "layer 1, head 2: 0.03",
                                                        "layer 2, head 1: 0.80", "layer 2, head 2: 0.02"]
