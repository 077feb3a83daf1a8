"""scripts/export_lesson.py: a handout of a short lesson on the untrained model and on a tiny checkpoint, with real
pictures where kaleido can draw; readable errors for a bad lesson, checkpoint or step."""
import re

import pytest

import core
from app.figures.export import export_problem
from scripts import export_lesson
from tests.helpers import FIXTURES, stopping_model

LESSON = (FIXTURES / "lesson" / "short.toml").read_text(encoding="utf-8")
needs_kaleido = pytest.mark.skipif(export_problem(True) is not None, reason="kaleido cannot draw here")


@pytest.fixture
def lesson_file(tmp_path):
    path = tmp_path / "lesson.toml"
    path.write_text(LESSON, encoding="utf-8")
    return path


@needs_kaleido
def test_a_handout_of_the_untrained_model(lesson_file, tmp_path, capsys):
    out = tmp_path / "handout.html"
    assert export_lesson.main(["--lesson", str(lesson_file), "--out", str(out), "--steps", "1", "4"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "untrained model" in page and "1. Weights" in page and "Which form?" not in page
    assert len(re.findall(r"<img src='data:image/png;base64,", page)) == 1        # step 4 cannot be drawn
    assert "could not answer this one: positions 95 and 50 plus 10 must be below 100" in page
    assert "wrote" in capsys.readouterr().out


@needs_kaleido
def test_a_handout_of_a_checkpoint_in_svg(lesson_file, tmp_path, tokenizer):
    folder = core.save_checkpoint(tmp_path / "tiny-lesson", stopping_model(len(tokenizer)), tokenizer,
                                  {"name": "tiny-lesson", "trained_here": True})
    out = tmp_path / "handout.html"
    assert export_lesson.main([str(folder), "--lesson", str(lesson_file), "--out", str(out), "--steps", "3",
                               "--format", "svg"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<b>tiny-lesson</b>" in page and "untrained" not in page
    assert page.count("<img src='data:image/svg+xml;base64,") == 1 and "The model's choice:" in page


def test_bad_input_is_a_readable_error(lesson_file, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    text = LESSON.replace('figure = "pronoun"', 'figure = "pronouns"')
    bad.write_text(text, encoding="utf-8")
    line = text.splitlines().index('figure = "pronouns"') + 1
    out = str(tmp_path / "x.html")
    assert export_lesson.main(["--lesson", str(bad), "--out", out]) == 2
    assert f"line {line} (step 3): unknown figure 'pronouns'" in capsys.readouterr().err
    assert export_lesson.main(["--lesson", str(lesson_file), "--out", out, "--steps", "5"]) == 2
    assert "steps 1 to 4" in capsys.readouterr().err
    assert export_lesson.main([str(tmp_path / "none"), "--lesson", str(lesson_file), "--out", out]) == 2
    assert "Cannot load the checkpoint" in capsys.readouterr().err
