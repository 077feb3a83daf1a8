"""The Watch it learn page, run headless with AppTest: one run per server, watched by every session, stoppable by
the session that started it, for either task (the digits, Learn to copy). The budget is cut to a few dozen steps
(the page's own is ~600)."""
import base64
import json
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app import cache
from core.paths import REPO
from core.studies import copy_task, toy_task

PAGE = str(REPO / "app" / "screens" / "watch_it_learn.py")


@pytest.fixture
def short_runs(monkeypatch, tmp_path):
    """Runs of 40 steps (slow motion: 10 steps a second), and the server's run holder emptied before and after."""
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    real = toy_task.ToyConfig
    monkeypatch.setattr(toy_task, "ToyConfig", lambda **kw: real(**{**kw, "steps": 40, "every": 10,
                                                                     "pace": 10.0 if kw.get("pace") else 0.0}))
    cache.toy_runs.clear()
    yield
    run = cache.toy_runs().run
    if run is not None:
        run.stop()
        run.join(30)
    cache.toy_runs.clear()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def progress(at: AppTest) -> str:
    bars = at.get("progress")
    return bars[0].proto.text if bars else ""


def watcher(wait_s: float = 30.0) -> AppTest:
    """Another session opening the page once the run has reported its first step (a busy machine takes longer)."""
    deadline = time.monotonic() + wait_s
    while True:
        at = ok(AppTest.from_file(PAGE, default_timeout=60).run())
        if " · step " in progress(at) or time.monotonic() > deadline:
            return at
        time.sleep(0.25)


@pytest.mark.slow
def test_a_run_is_started_watched_by_another_session_and_stopped_by_its_starter(short_runs):
    teacher = ok(AppTest.from_file(PAGE, default_timeout=60).run())
    assert any("No run yet" in i.value for i in teacher.info)
    teacher.text_input(key="toy_name").set_value("Ms Smith")
    teacher.button(key="toy_start").click().run()
    ok(teacher)
    assert teacher.button(key="toy_start").disabled and not teacher.button(key="toy_stop").disabled
    student = watcher()                                                      # another session: the same run
    assert student.button(key="toy_start").disabled and student.button(key="toy_stop").disabled
    assert progress(student).startswith("Started by Ms Smith · step ") and "training" in progress(student)
    assert len(student.get("plotly_chart")) == 2                             # the loss and the cross-attention
    teacher.button(key="toy_stop").click().run()
    cache.toy_runs().run.join(30)
    ok(student.run())
    assert "stopped" in progress(student) and any(s.value.startswith("Done:") for s in student.success)
    assert not student.button(key="toy_start").disabled


@pytest.mark.slow
def test_a_full_speed_run_reaches_its_end(short_runs):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="toy_speed").set_value("full")
    at.button(key="toy_start").click().run()
    cache.toy_runs().run.join(30)
    ok(at.run())
    assert progress(at).startswith("Started by session ") and progress(at).endswith("finished")
    assert "step 40 of 40" in progress(at)
    assert "Clearest head now" in " ".join(c.value for c in at.caption)


# ---- Learn to copy: the same page, a GPT's induction head ----

@pytest.fixture
def short_copy_runs(monkeypatch, tmp_path):
    """Copy runs of 60 steps (slow motion: 10 steps a second), both run holders emptied before and after."""
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    real = copy_task.CopyConfig
    monkeypatch.setattr(copy_task, "CopyConfig", lambda **kw: real(**{**kw, "steps": 60, "every": 10}))
    cache.copy_runs.clear()
    cache.toy_runs.clear()
    yield
    run = cache.copy_runs().run
    if run is not None:
        run.stop()
        run.join(30)
    cache.copy_runs.clear()
    cache.toy_runs.clear()


def copy_page() -> AppTest:
    at = ok(AppTest.from_file(PAGE, default_timeout=60).run())
    at.radio(key="watch_task").set_value("copy")
    return ok(at.run())


def chart(at: AppTest, n: int) -> dict:
    """The n-th Plotly chart as sent to the browser."""
    return json.loads(at.get("plotly_chart")[n].proto.spec)


def array(value) -> np.ndarray:
    """A Plotly array of the spec: a list, or {"dtype", "bdata", "shape"} (Plotly sends numpy arrays as base64)."""
    if isinstance(value, dict):
        shape = [int(s) for s in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.asarray(value, dtype=float)


@pytest.mark.slow
def test_learn_to_copy_shows_the_snapshots_of_cores_run(short_copy_runs):
    at = copy_page()
    assert any("No run yet" in i.value for i in at.info) and not at.get("plotly_chart")
    at.radio(key="copy_speed").set_value("full")
    at.button(key="copy_start").click().run()
    run = cache.copy_runs().run
    run.join(60)
    ok(at.run())
    snaps, result, _ = run.view()
    last = snaps[-1]
    assert cache.toy_runs().run is None                                     # the digits' run holder is apart
    assert [s.step for s in snaps] == [0, 10, 20, 30, 40, 50, 60] and result.stopped_by == "steps"
    assert progress(at).endswith("step 60 of 60 · " + f"{last.seconds:.0f} s · finished")
    layer, head = last.best
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"loss": f"{last.loss:.2f}", f"induction, L{layer + 1} H{head + 1}": f"{last.best_induction:.2f}",
                       "loss gap": f"{last.loss_gap:+.2f}"}
    best_map, training, every = chart(at, 0), chart(at, 1), chart(at, 2)
    assert best_map["layout"]["title"]["text"] == (f"Layer {layer + 1}, head {head + 1} at step 60: induction score "
                                                   f"{last.best_induction:.2f}")
    assert np.allclose(array(best_map["data"][0]["z"]), last.example[layer, head])
    score = next(t for t in training["data"] if t["name"] == "induction score")
    assert list(array(score["x"])) == [s.step for s in snaps]
    assert np.allclose(array(score["y"]), [s.best_induction for s in snaps])
    formed = copy_task.phase_change(snaps, run.cfg.threshold)             # 60 steps: too early for a head
    marks = [s for s in training["layout"].get("shapes", []) if s["x0"] == s["x1"]]
    assert [m["x0"] for m in marks] == ([formed.step] * 2 if formed else [])
    assert any("formed at step" in c.value for c in at.caption) == (formed is not None)
    assert len(every["data"]) == 2 * run.cfg.N * run.cfg.h                  # a map and its outline per head
    assert any(s.value.startswith("Done: 60 steps") for s in at.success)
    assert any("induction head" in c.value and "phase change" in c.value for c in at.caption)   # how to read


@pytest.mark.slow
def test_a_copy_run_is_watched_by_another_session_and_stopped_only_by_its_starter(short_copy_runs):
    teacher = copy_page()
    teacher.text_input(key="copy_name").set_value("Ms Smith")
    teacher.button(key="copy_start").click().run()                          # slow motion: 6 s
    ok(teacher)
    assert teacher.button(key="copy_start").disabled and not teacher.button(key="copy_stop").disabled
    deadline = time.monotonic() + 30
    while True:                                                             # another session: the same run
        student = copy_page()
        if " · step " in progress(student) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert progress(student).startswith("Started by Ms Smith · step ") and "training" in progress(student)
    assert student.button(key="copy_start").disabled and student.button(key="copy_stop").disabled
    assert cache.copy_runs().run.running
    teacher.button(key="copy_stop").click().run()
    cache.copy_runs().run.join(30)
    ok(student.run())
    _, result, _ = cache.copy_runs().run.view()
    assert result.stopped_by == "stop" and result.steps < 60
    assert "stopped" in progress(student) and not student.button(key="copy_start").disabled
