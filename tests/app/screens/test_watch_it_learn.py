"""The Watch it learn page, run headless with AppTest: one run per server, watched by every session, stoppable by
the session that started it. The budget is cut to a few dozen steps (the page's own is ~600)."""
import time

import pytest
from streamlit.testing.v1 import AppTest

from app import cache
from core.paths import REPO
from core.studies import toy_task

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


def test_a_full_speed_run_reaches_its_end(short_runs):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="toy_speed").set_value("full")
    at.button(key="toy_start").click().run()
    cache.toy_runs().run.join(30)
    ok(at.run())
    assert progress(at).startswith("Started by session ") and progress(at).endswith("finished")
    assert "step 40 of 40" in progress(at)
    assert "Clearest head now" in " ".join(c.value for c in at.caption)
