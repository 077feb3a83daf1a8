"""scripts/bench/bench_class.py's live-run option: what it reads from the Watch it learn page must match the page."""
import json

from streamlit.testing.v1 import AppTest

from app.figures.toy import done_text
from core.paths import REPO
from scripts.bench import bench_class as bc


def test_the_speed_and_task_labels_are_the_pages(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    at = AppTest.from_file(str(REPO / "app" / "screens" / f"{bc.WATCH_PAGE}.py"), default_timeout=60).run()
    assert not at.exception
    assert set(bc.SPEED_LABELS.values()) == set(at.radio(key="toy_speed").options)
    assert "Reverse" in at.radio(key="toy_task").options
    assert at.button(key="toy_start")


def test_the_speed_of_a_finished_run_is_read_from_the_page():
    m = bc.DONE.search(done_text(1_200, 31.6))
    assert m and (int(m.group(1).replace(",", "")), int(m.group(2))) == (1200, 32)


def test_logged_runs_of_one_page(tmp_path):
    log = tmp_path / "runs.jsonl"
    rows = [{"t": 10.0, "seconds": 0.1, "page": ""}, {"t": 11.0, "seconds": 0.2, "page": bc.REDRAW},
            {"t": 12.0, "seconds": 0.3, "page": bc.WATCH_PAGE}, {"t": 99.0, "seconds": 0.4, "page": ""}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bc.logged_runs(str(log), 0, 50) == [0.1]                           # the explorer's, in the time span
    assert bc.logged_runs(str(log), 0, 50, page=bc.REDRAW) == [0.2]
    assert bc.logged_runs(str(log), 0, 50, page=None) == [0.1, 0.2, 0.3]


def test_a_button_click_travels_in_one_run_only():
    from streamlit.proto.Button_pb2 import Button
    s = bc.Session("http://localhost:1")
    s.elements["$$ID-abc-toy_start"] = ("button", Button(id="$$ID-abc-toy_start"))
    s.elements["$$ID-abd-toy_stop"] = ("button", Button(id="$$ID-abd-toy_stop", disabled=True))
    assert s.press("toy_start") and not s.press("toy_stop")
    first, second = s.back_msg(), s.back_msg("frag1")
    assert [w.trigger_value for w in first.rerun_script.widget_states.widgets] == [True]
    assert not second.rerun_script.widget_states.widgets
    assert second.rerun_script.fragment_id == "frag1" and second.rerun_script.is_auto_rerun
