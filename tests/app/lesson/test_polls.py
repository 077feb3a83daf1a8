"""app/lesson/polls.py: a step's poll kind read from lesson.toml (and worded errors), and a student's answer checked
for its kind; the shipped lesson gives each step the kind that fits."""
import pytest

from app.lesson import steps
from app.lesson.polls import Poll, check_answer, parse_poll, sentence_words, step_sentence


def test_the_shipped_lesson_polls_each_step_with_the_kind_that_fits():
    lesson = steps.load_lesson(steps.LESSON)
    kinds = {s.question: s.poll.kind for s in lesson.steps}
    assert kinds["Which word will 'its' look at?"] == "word"
    assert kinds["'Bank' is feminine in German. Will the model write ihre or seine?"] == "choice"
    assert kinds["The German so far ends with 'aber'. Which word comes next, and how sure is the model?"] == "text"
    for s in lesson.steps:
        if s.poll.kind == "word":
            assert sentence_words(step_sentence(s.figure, s.options))
        if s.poll.kind == "choice":
            assert len(s.poll.choices) >= 2 and (not s.poll.expected or s.poll.expected in s.poll.choices)


@pytest.mark.parametrize("raw, message", [
    ({"poll": "vote"}, "unknown kind 'vote'"),
    ({"poll": "choice", "choices": ["only one"]}, "2 to 8 different texts"),
    ({"poll": "choice", "choices": ["a", "a"]}, "2 to 8 different texts"),
    ({"poll": "text", "choices": ["a", "b"]}, "only a poll"),
    ({"poll": "choice", "choices": ["a", "b"], "expected": "c"}, "one of the step's choices"),
])
def test_a_wrong_poll_is_worded(raw, message):
    with pytest.raises(ValueError, match=message):
        parse_poll(raw)


def test_a_wrong_poll_in_a_lesson_file_names_its_line():
    text = ('title = "t"\n[[step]]\ntitle = "a"\nfigure = "scaling"\nexplain = "e"\nquestion = "q"\n'
            'poll = "choice"\nchoices = ["x"]\n')
    with pytest.raises(steps.LessonError, match=r"line 8 \(step 1\): choices"):
        steps.parse_lesson(text)


def test_answers_are_checked_for_their_kind():
    choice = Poll("choice", ("ihre", "seine"))
    assert check_answer(choice, " ihre ") == "ihre"
    with pytest.raises(ValueError, match="Pick one of"):
        check_answer(choice, "sein")
    assert check_answer(Poll("word"), "Law", ["The", "Law"]) == "Law"
    with pytest.raises(ValueError, match="Tap one"):
        check_answer(Poll("word"), "dog", ["The", "Law"])
    assert check_answer(Poll("number"), "1,5") == "1.5" and check_answer(Poll("number"), " 12 ") == "12"
    for bad in ("twelve", "nan", "inf"):
        with pytest.raises(ValueError):
            check_answer(Poll("number"), bad)
    assert check_answer(Poll("text"), "Die\x00  Bank\u202e") == "Die Bank"
    with pytest.raises(ValueError, match="first"):
        check_answer(Poll("text"), " \x07 ")
