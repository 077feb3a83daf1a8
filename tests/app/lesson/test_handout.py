"""app/lesson/handout.py: the handout holds every question first, then every answer with its figure, escapes the
lesson's text, says when the model is untrained, and embeds real pictures."""
import base64
import re

import plotly.graph_objects as go
import pytest

from app.checkpoints import UNTRAINED
from app.figures.export import export_problem
from app.lesson.steps import parse_lesson
from app.lesson.figures import Answer, Before
from app.lesson.handout import handout_html, image_tag, inline_markdown
from app.text import md_escape
from tests.helpers import FIXTURES

# the short lesson, its title with markup that must show as written
SHORT = (FIXTURES / "lesson" / "short.toml").read_text(encoding="utf-8")
LESSON = SHORT.replace('"A short lesson"', '"Two <b>steps</b>"')


def fake_image(fig, alt: str) -> str:
    return f"<img src='data:image/png;base64,AAAA' alt='{alt}' data-title='{fig.layout.title.text}'>"


def answers(lesson) -> list:
    """The first two steps: one answered, one that could not be."""
    first, second = lesson.steps[:2]
    return [(first, Before("**query 1** = (1, 0)"), Answer(go.Figure(layout_title_text="first"), "Key **1** wins.")),
            (second, None, "positions 9 and 90 plus 10 must be below 100")]


def test_questions_come_first_then_answers_with_figures():
    lesson = parse_lesson(LESSON)
    page = handout_html(lesson, "news-small", answers(lesson), image=fake_image)
    questions, replies = page.split("What the model answered")
    assert questions.index("1. Weights") < questions.index("2. Where it looks")
    assert questions.count("Your guess") == 2 and "<img" not in questions
    assert "<b>query 1</b> = (1, 0)" in questions and "Each <b>query</b> asks." in questions
    assert replies.count("<img") == 1 and "data-title='first'" in replies and "Key <b>1</b> wins." in replies
    assert "Key 1." in replies                                             # the lesson's own answer
    assert "could not answer this one: positions 9 and 90" in replies      # a step that failed says why
    assert "Two &lt;b&gt;steps&lt;/b&gt;" in page and "<b>news-small</b>" in page and "untrained" not in page


def test_an_untrained_model_is_said_so():
    lesson = parse_lesson(LESSON)
    assert "untrained model" in handout_html(lesson, UNTRAINED, answers(lesson), image=fake_image)


def test_inline_markdown_escapes_html_and_keeps_emphasis():
    assert inline_markdown("<script>x</script> **a** *b* `c`") == \
        "&lt;script&gt;x&lt;/script&gt; <b>a</b> <i>b</i> <code>c</code>"
    assert inline_markdown("one\nline\n\ntwo  \nthree") == "one line<br>two<br>three"
    assert inline_markdown("2 * 3 * 4") == "2 * 3 * 4"                     # a lone star is no emphasis
    assert inline_markdown("**a:** " + md_escape("The *cat* <unk>.")) == "<b>a:</b> The *cat* &lt;unk&gt;."   # as typed


@pytest.mark.slow
@pytest.mark.skipif(export_problem(True) is not None, reason="kaleido cannot draw here")
def test_a_figure_is_embedded_as_a_png_shown_at_its_size():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout=dict(width=400, height=300))
    tag = image_tag(fig, "two bars")
    data = base64.b64decode(re.search(r"base64,([^']+)'", tag).group(1))
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == 800      # drawn at 2x
    assert "width='400'" in tag and "alt='two bars'" in tag
