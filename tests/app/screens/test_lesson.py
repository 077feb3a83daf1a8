"""The Lesson page through app/main.py with AppTest, on the untrained model and a short lesson file: the step in the
URL, Previous / Next, a question before the answer and the answer on Reveal, the untrained model said, teacher
notes, and a malformed lesson file named by line. (The app's own lesson: tests/app/lesson/test_steps.py and
tests/browser/test_lesson_browser.py.)"""
import json

import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO
from tests.helpers import FIXTURES

MAIN = str(REPO / "app" / "main.py")
LESSON = (FIXTURES / "lesson" / "short.toml").read_text(encoding="utf-8")


@pytest.fixture
def app(tmp_path, monkeypatch):
    """lesson(step=None) -> the Lesson page run at ?step=step (None: no step in the URL)."""
    (tmp_path / "checkpoints").mkdir()
    lesson = tmp_path / "lesson.toml"
    lesson.write_text(LESSON, encoding="utf-8")
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("ATTN_EXPLORER_LESSON", str(lesson))

    def run(step: str | None = None) -> AppTest:
        at = AppTest.from_file(MAIN, default_timeout=300)
        at.switch_page("screens/lesson.py")
        if step is not None:
            at.query_params["step"] = step
        return ok(at.run())
    return run


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def heading(at: AppTest) -> str:
    return at.subheader[0].value


def button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


@pytest.mark.slow
def test_a_step_asks_first_and_the_model_answers_on_reveal(app):
    at = app()
    assert heading(at) == "1. Weights" and at.query_params["step"] == "1"
    assert any("Which key gets the most?" in i.value for i in at.info)
    assert not at.get("plotly_chart") and not at.success                  # no answer before Reveal
    assert button(at, "lesson_prev").disabled
    assert any("Work it out on the board." in m.value for m in at.expander[0].markdown)    # teacher notes
    ok(button(at, "lesson_reveal").click().run())
    (fact,) = at.success
    assert "softmax: 0.58, 0.14, 0.28" in fact.value and "**key 1**" in fact.value
    (chart,) = at.get("plotly_chart")
    assert json.loads(chart.proto.spec)["data"][0]["type"] == "heatmap"
    assert not any(b.key == "lesson_reveal" for b in at.button)


@pytest.mark.slow
def test_the_url_opens_a_step_and_next_and_previous_move(app):
    at = app("2")
    assert heading(at) == "2. Where it looks"
    assert any("**English:** The cat sat" in m.value for m in at.markdown)        # before the reveal: its input
    ok(button(at, "lesson_next").click().run())
    assert heading(at) == "3. Which form?" and at.query_params["step"] == "3"
    assert not button(at, "lesson_next").disabled
    ok(button(at, "lesson_prev").click().run())
    assert heading(at) == "2. Where it looks" and at.query_params["step"] == "2"


@pytest.mark.parametrize("step, shown", [("99", 4), ("0", 1), ("two", 1)])
def test_a_step_out_of_range_shows_the_nearest(app, step, shown):
    at = app(step)
    assert heading(at).startswith(f"{shown}.") and at.query_params["step"] == str(shown)


@pytest.mark.slow
def test_the_untrained_model_says_so_with_its_answer(app):
    at = app("2")
    ok(button(at, "lesson_reveal").click().run())
    warnings = [w.value for w in at.warning]
    assert any("Untrained model, random attention" in w and "Layer 1, head 1" in w for w in warnings), warnings
    at = app("1")                                  # the same for every model: nothing to warn about
    ok(button(at, "lesson_reveal").click().run())
    assert not any("Untrained model" in w.value for w in at.warning) and at.success


def test_a_malformed_lesson_file_is_named_by_line(app, tmp_path):
    text = LESSON.replace('figure = "positional"', 'figure = "waves"')
    (tmp_path / "lesson.toml").write_text(text)
    line = text.splitlines().index('figure = "waves"') + 1
    at = app()
    (error,) = at.error
    assert f"lesson.toml, line {line} (step 4): unknown figure 'waves'" in error.value
