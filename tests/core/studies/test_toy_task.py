"""core.studies.toy_task: the live toy training learns the (anti-)diagonal, stops when asked, runs one at a time."""
import threading

import numpy as np
import pytest
import torch

from core.studies import toy_task as tt


def anti_diagonal(n: int) -> np.ndarray:
    """The cross-attention (T, S) of a perfect reversal of n digits: row t on source n - 1 - t, the </s> row on </s>."""
    m = np.zeros((n + 1, n + 1))
    m[np.arange(n), n - 1 - np.arange(n)] = 1.0
    m[n, n] = 1.0
    return m


def test_alignment_hits_tells_a_reversal_from_a_copy_and_from_noise():
    m = anti_diagonal(6)
    assert tt.alignment_hits(m, "reverse", 6) == 1.0
    assert tt.alignment_hits(m, "copy", 6) == 0.0                        # the diagonal is not the anti-diagonal
    uniform = np.full((7, 7), 1 / 7)                                        # argmax: the first column, every row
    assert tt.alignment_hits(uniform, "reverse", 6) == pytest.approx(1 / 6)
    assert tt.alignment_hits(np.stack([m, uniform]), "reverse", 6).tolist() == pytest.approx([1.0, 1 / 6])


def test_encoding_and_labels():
    src, tgt = tt.encode("reverse", "3105")
    assert tt.tokens(src) == ["3", "1", "0", "5", "</s>"] and tt.tokens(tgt) == ["<s>", "5", "0", "1", "3", "</s>"]
    assert tt.tokens(tt.encode("copy", "3105")[1])[1:5] == list("3105")
    with pytest.raises(ValueError, match="digits only"):
        tt.ToyConfig(example="12a")
    with pytest.raises(ValueError, match="At most 8 digits"):
        tt.ToyConfig(example="123456789")
    with pytest.raises(ValueError, match="task"):
        tt.ToyConfig(task="sort")


@pytest.mark.slow
def test_a_short_run_learns_to_look_at_the_mirrored_digit():
    """A few seconds of training: some cross-attention head puts its largest weight on the digit being written for
    most rows of fresh 8-digit strings; before training, none does."""
    cfg = tt.ToyConfig(steps=250, every=50)
    seen = []
    result = tt.train(cfg, on_snapshot=seen.append)
    assert [s.step for s in result.snapshots] == [0, 50, 100, 150, 200, 250] and seen == result.snapshots
    assert result.stopped_by == "steps" and result.steps == 250
    assert result.snapshots[0].hits.max() < 0.5                             # random weights: no alignment
    hits = tt.held_out_hits(result.model, cfg)                              # (N_dec, h) on 32 unseen strings
    assert hits.shape == (cfg.N, cfg.h) and hits.max() >= 0.8, hits
    last = result.snapshots[-1]
    assert last.loss < result.snapshots[1].loss and last.accuracy > 0.8
    assert last.guess == tt.target_digits("reverse", cfg.example)
    # the same maps scored as a copy: the check is about the mirrored position, not any sharp map
    layer, head = tt.best_head(last.hits)
    assert tt.alignment_hits(last.cross[layer, head], "copy", len(cfg.example)) < 0.3
    assert last.loss > tt.expected_loss_floor(cfg) > 0                     # label smoothing keeps the loss above 0


def test_train_stops_when_asked_or_out_of_time_and_leaves_the_global_rng_alone():
    stop = threading.Event()
    stop.set()
    state = torch.random.get_rng_state()
    r = tt.train(tt.ToyConfig(steps=100), stop=stop)
    assert r.stopped_by == "stop" and r.steps == 0 and [s.step for s in r.snapshots] == [0]
    assert torch.equal(torch.random.get_rng_state(), state)
    r = tt.train(tt.ToyConfig(steps=10_000, max_seconds=0.3))
    assert r.stopped_by == "time" and 0 < r.steps < 10_000 and r.snapshots[-1].step == r.steps


def test_one_run_at_a_time_on_its_own_thread():
    runs = tt.OneRunAtATime()
    before = torch.get_num_threads()
    torch.set_num_threads(2)                                  # the caller's setting is not the training thread's
    try:
        run, started = runs.start(tt.ToyConfig(steps=1000, pace=50), "Ms Smith", owner="ab12")
        again, started_again = runs.start(tt.ToyConfig(), "someone else")
        assert started and not started_again and again is run and run.started_by == "Ms Smith"
        run.stop()
        run.join(30)
    finally:
        torch.set_num_threads(before)
    assert not run.running and run.torch_threads == 1
    snapshots, result, error = run.view()
    assert error is None and result.stopped_by == "stop" and result.steps < 1000 and snapshots
    _, started = runs.start(tt.ToyConfig(steps=1), "next")
    assert started
    runs.run.join(30)


@pytest.mark.parametrize("task", ["reverse", "copy"])
def test_every_row_of_a_batch_is_an_encoded_example(task):
    cfg = tt.ToyConfig(task=task, min_len=2, max_len=6, example="12")
    src, tgt = tt.batch(cfg, 50, torch.Generator().manual_seed(3))
    assert src.shape == (50, 7) and tgt.shape == (50, 8)
    lengths = set()
    for s, t in zip(src.tolist(), tgt.tolist()):
        digits = "".join(tok for tok in tt.tokens(s) if tok.isdigit())
        lengths.add(len(digits))
        want_src, want_tgt = tt.encode(task, digits)
        assert s == want_src + [tt.PAD] * (7 - len(want_src)) and t == want_tgt + [tt.PAD] * (8 - len(want_tgt))
    assert lengths == {2, 3, 4, 5, 6}
