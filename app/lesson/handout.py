"""The lesson's handout: one self-contained HTML file to print or share. First every step's question with room for
the class's guess, then (from a new printed page) the model's answers: each figure as an embedded image, what the
model did in numbers, and the lesson's answer.

Pure: the lesson and its answers in, HTML text out (scripts/export_lesson.py writes it, the Lesson page offers it
for download). Figures become images through app.figures.export (kaleido for Plotly, vl-convert for Altair).
"""
from __future__ import annotations

import base64
import html
import re
from datetime import date

from app.checkpoints import UNTRAINED
from app.figures.export import FORMATS, PNG_SCALE, figure_bytes
from app.figures.style import readable
from app.lesson.figures import FIGURES

STYLE = """
body { font-family: "Source Sans Pro", "Helvetica Neue", Arial, sans-serif; max-width: 52em; margin: 2em auto;
       color: #1a1a1a; line-height: 1.45; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } .meta { color: #555; margin-top: 0; }
section { break-inside: avoid; page-break-inside: avoid; margin: 1.5em 0; }
.question { font-weight: bold; border-left: 4px solid #1c83e1; padding-left: 0.6em; }
.guess { border-bottom: 1px solid #999; height: 2.2em; }
.answers { break-before: page; page-break-before: always; }
.fact { background: #e8f5e9; padding: 0.5em 0.8em; border-radius: 4px; }
.warning { background: #fff8e1; padding: 0.5em 0.8em; border-radius: 4px; }
img { max-width: 100%; height: auto; display: block; margin: 0.6em 0; }
"""


def inline_markdown(text: str) -> str:
    """The lesson's text as HTML: escaped, with **bold**, *italic*, `code`, backslash escapes and line breaks (the
    little Markdown a lesson file and the answers use; docs/lesson.md says so)."""
    escaped = {}                    # a backslash-escaped character (app.text.md_escape) is that character, as written

    def hide(m):
        escaped[f"\0{len(escaped)}\0"] = m.group(1)
        return f"\0{len(escaped) - 1}\0"
    out = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~$:])", hide, text.strip())
    out = html.escape(out, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", out)
    out = "<br>".join(" ".join(line.split()) for line in re.split(r"\n\s*\n|  \n", out))
    for token, char in escaped.items():
        out = out.replace(token, html.escape(char, quote=False))
    return out


def image_tag(fig, alt: str, fmt: str = "png") -> str:
    """An <img> of the figure (readable as on the app's pages) with its picture inside it as a data: URI, so that
    the file needs nothing beside it; a PNG, drawn at twice its size for print, is shown at its size."""
    data = figure_bytes(readable(fig), fmt)
    width = ""
    if fmt == "png" and data[12:16] == b"IHDR":
        width = f" width='{int.from_bytes(data[16:20], 'big') // PNG_SCALE}'"
    return (f"<img src='data:{FORMATS[fmt]};base64,{base64.b64encode(data).decode('ascii')}'{width} "
            f"alt='{html.escape(alt, quote=True)}'>")


def handout_html(lesson, model_name: str, answers: list, image=image_tag) -> str:
    """The handout of `lesson` as answered by the model `model_name`.

    answers: (step, Before or None, Answer, or the text of why the model could not answer) for each step, in order.
    image: (figure, alt text) -> its <img> tag (default: an embedded PNG).
    """
    untrained = model_name == UNTRAINED
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(lesson.title)}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(lesson.title)}</h1>",
             f"<p class='meta'>Answers drawn by the model <b>{html.escape(model_name)}</b> of the Attention Explorer, "
             f"{date.today().isoformat()}. {inline_markdown(lesson.about)}</p>"]
    if untrained:
        parts.append("<p class='warning'>These answers come from an untrained model: its attention is random, so "
                     "they show what a model does before it learns.</p>")
    parts.append("<h2>Questions</h2>")
    for n, (step, before, _) in enumerate(answers, 1):
        context = f"<p>{inline_markdown(before.text)}</p>" if before is not None and before.text else ""
        parts.append(f"<section><h3>{n}. {html.escape(step.title)}</h3><p>{inline_markdown(step.explain)}</p>"
                     f"{context}<p class='question'>{inline_markdown(step.question)}</p>"
                     "<p>Your guess:</p><div class='guess'></div><div class='guess'></div></section>")
    parts.append("<div class='answers'><h2>What the model answered</h2>")
    for n, (step, _, answer) in enumerate(answers, 1):
        parts.append(f"<section><h3>{n}. {html.escape(step.title)}</h3>"
                     f"<p class='question'>{inline_markdown(step.question)}</p>")
        if isinstance(answer, str):
            parts.append(f"<p class='warning'>The model could not answer this one: {html.escape(answer)}</p>")
        else:
            parts.append(image(answer.fig, FIGURES[step.figure].about)
                         + f"<p class='fact'>{inline_markdown(answer.fact)}</p>")
        if step.answer:
            parts.append(f"<p>{inline_markdown(step.answer)}</p>")
        parts.append("</section>")
    parts.append("</div></body></html>")
    return "\n".join(parts)
