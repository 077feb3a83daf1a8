"""app/lesson/steps.py: the shipped lesson reads, and a malformed lesson file gets a message that names its line."""
import pytest

from app.lesson import steps as L
from app.lesson.figures import FIGURES
from tests.helpers import FIXTURES

GOOD = (FIXTURES / "lesson" / "short.toml").read_text(encoding="utf-8")


def step_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line == "[[step]]"]


def line_of(text: str, start: str) -> int:
    """The 1-based number of the first line of `text` that starts with `start`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(start))


def test_the_shipped_lesson_has_eight_to_fourteen_complete_steps():
    lesson = L.load_lesson(L.LESSON)
    assert 8 <= len(lesson.steps) <= 14 and lesson.title
    for step in lesson.steps:
        assert step.figure in FIGURES and step.question.endswith("?") and step.explain and step.answer
        assert step.notes.say and step.notes.misconception and step.notes.deeper
        assert len(step.explain) <= 260, step.title       # two or three sentences a teacher reads aloud
    assert {s.figure for s in lesson.steps} == set(FIGURES)        # every kind of figure is used once at least


def test_a_good_file_gives_steps_with_options_defaults_notes_and_lines():
    lesson = L.parse_lesson(GOOD, "mine.toml")
    first, second, _, last = lesson.steps
    assert (lesson.title, lesson.about, lesson.source) == ("A short lesson", "Four steps.", "mine.toml")
    assert first.notes == L.Notes(say="Work it out on the board.", misconception="That attention picks one word.")
    assert first.answer == "Key 1." and first.explain == "Each **query** asks."
    assert first.options == FIGURES["attention_steps"].options
    assert second.options == {"sentence": "The cat sat."}
    assert last.options == {**FIGURES["positional"].options, "first": 95}
    assert [s.line for s in lesson.steps] == step_lines(GOOD)


@pytest.mark.parametrize("change, line_start, words", [
    (("question = \"Which key gets the most?\"", "question = Which key?"), "question = Which key?", "line {n}, column"),
    (("figure = \"positional\"", "figure = \"sines\""), "figure = \"sines\"", "unknown figure 'sines'"),
    (("first = 95", "frist = 95"), "frist = 95", "unknown key 'frist'"),
    (("first = 95", "first = \"three\""), "first = \"three\"", "'first' must be a number"),
    (("question = \"The same?\"\n", ""), None, "needs 'question'"),
    (("say = \"Work", "sya = \"Work"), "sya = ", "[step.notes] takes"),
    (("about = \"Four steps.\"", "abuot = \"Four steps.\""), "abuot", "unknown key 'abuot'"),
])
def test_a_malformed_file_names_its_line(change, line_start, words):
    text = GOOD.replace(*change)
    assert text != GOOD
    with pytest.raises(L.LessonError) as e:
        L.parse_lesson(text, "mine.toml")
    n = line_of(text, line_start) if line_start else step_lines(text)[-1]    # missing: its [[step]]'s line
    message = str(e.value)
    assert message.startswith(f"mine.toml, line {n}") and words.format(n=n) in message, message


def test_a_lesson_without_title_or_steps_says_what_is_missing(tmp_path):
    with pytest.raises(L.LessonError, match="needs a title"):
        L.parse_lesson("[[step]]\ntitle = 'x'\n")
    with pytest.raises(L.LessonError, match="no steps"):
        L.parse_lesson("title = 'x'\n")
    with pytest.raises(L.LessonError, match="Cannot read the lesson file"):
        L.load_lesson(tmp_path / "missing.toml")


def test_the_app_reads_the_lesson_named_by_the_environment(tmp_path, monkeypatch):
    mine = tmp_path / "mine.toml"
    mine.write_text(GOOD, encoding="utf-8")
    monkeypatch.setenv("ATTN_EXPLORER_LESSON", str(mine))
    assert L.lesson_path() == mine and L.load_lesson().title == "A short lesson"
    monkeypatch.delenv("ATTN_EXPLORER_LESSON")
    assert L.lesson_path() == L.LESSON
