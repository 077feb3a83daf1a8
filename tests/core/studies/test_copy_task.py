"""Learn to copy (core.studies.copy_task): a short run forms an induction head in layer 2 (its best induction score
rises from noise, the second copy's loss falls below the first's), the snapshots' schedule, stopping, the live run."""
import threading

import numpy as np
import pytest

from core.studies import copy_task as ct
from core.studies.induction import scores_from_maps

SHORT = ct.CopyConfig(min_len=4, max_len=8, eval_len=6, eval_batch=32, steps=200, every=50, seed=0)


@pytest.mark.slow
def test_a_short_run_forms_an_induction_head_and_snapshots_measure_what_they_say():
    short_run = ct.train(SHORT)                                 # a few seconds
    first, last = short_run.snapshots[0], short_run.snapshots[-1]
    assert first.best_induction < 0.2                           # random weights: about 1 / (keys a row sees)
    assert last.best_induction > first.best_induction + 0.25
    assert last.best[0] == 1                                    # in the second layer, where K-composition can be
    assert last.loss_gap < -1.0 < first.loss_gap                # it copies: the second copy is easier
    assert short_run.phase_change is None or short_run.phase_change.step > 0
    snaps = short_run.snapshots
    assert [s.step for s in snaps] == [0, 50, 100, 150, 200] and short_run.stopped_by == "steps"
    assert snaps[0].loss is None and all(s.loss > 0 for s in snaps[1:])
    assert snaps[-1].induction.shape == (2, 4) and snaps[-1].example.shape == (2, 4, 13, 13)
    np.testing.assert_allclose(snaps[-1].example.sum(-1), 1.0, atol=1e-5)
    # the example is the first held-out sequence, and its maps are the trained model's
    tokens = ct.held_out(SHORT)
    assert snaps[-1].example_ids == tokens[0].tolist()
    _, maps = short_run.model(tokens, need_weights=True)
    again = scores_from_maps(maps, SHORT.eval_len)
    np.testing.assert_allclose(again.induction, snaps[-1].induction, atol=1e-5)


def test_a_stop_ends_the_run_and_the_live_run_reports_it():
    stop = threading.Event()
    seen = []
    for s in ct.snapshots(ct.CopyConfig(min_len=4, max_len=6, eval_len=4, eval_batch=4, steps=50, every=5), stop):
        seen.append(s.step)
        if s.step == 10:
            stop.set()
    assert seen == [0, 5, 10]
    holder = ct.OneCopyRunAtATime()
    cfg = ct.CopyConfig(min_len=4, max_len=6, eval_len=4, eval_batch=4, steps=20, every=10)
    run, started = holder.start(cfg, "teacher")
    again, started_again = holder.start(cfg, "student")
    assert started and (again is run) and not started_again
    run.join(60)
    snaps, result, error = run.view()
    assert error is None and result.steps == 20 and [s.step for s in snaps] == [0, 10, 20]
    assert run.torch_threads == 1


def test_a_wrong_config_is_refused_in_words():
    with pytest.raises(ValueError, match="Copy lengths"):
        ct.CopyConfig(min_len=8, max_len=6)
    with pytest.raises(ValueError, match="at least 2 layers"):
        ct.CopyConfig(N=1)
