"""A lesson: steps a teacher walks a class through, read from a TOML file (app/lesson/lesson.toml, or a teacher's own).

Each step has a title, a short explanation to read aloud, a question for the class, the kind of figure the model
draws as the answer (app.lesson.figures.FIGURES) with its options, an optional answer to say after the reveal, and
teacher notes. A malformed file raises LessonError, whose message names the file and the line. No Streamlit here.
docs/lesson.md explains the format to teachers.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from app.lesson.figures import FIGURES
from app.lesson.polls import Poll, parse_poll

LESSON = Path(__file__).parent / "lesson.toml"     # default; the env var ATTN_EXPLORER_LESSON overrides it
TOP_KEYS = {"title", "about", "step"}
REQUIRED = ("title", "explain", "question", "figure")
STEP_KEYS = {"title", "explain", "question", "figure", "answer", "notes", "poll", "choices", "expected"}
NOTE_KEYS = {"say", "misconception", "deeper"}


class LessonError(ValueError):
    """A lesson file that cannot be used, worded for the teacher who wrote it (file and line)."""


@dataclass(frozen=True)
class Notes:
    """What the teacher reads, not the class: what to say, the usual misconception, where to go deeper."""
    say: str = ""
    misconception: str = ""
    deeper: str = ""


@dataclass(frozen=True)
class Step:
    """One step: explanation, question, the figure that answers it (kind and options), answer and notes."""
    title: str
    explain: str
    question: str
    figure: str
    options: dict
    answer: str = ""
    notes: Notes = field(default_factory=Notes)
    line: int = 0                                   # the line of its [[step]], for messages
    poll: Poll = field(default_factory=Poll)        # how a class answers its question (app.lesson.polls)


@dataclass(frozen=True)
class Lesson:
    title: str
    steps: tuple
    about: str = ""
    source: str = ""


def lesson_path() -> Path:
    """The lesson file the app shows: ATTN_EXPLORER_LESSON if set, else app/lesson/lesson.toml."""
    return Path(os.environ.get("ATTN_EXPLORER_LESSON") or LESSON)


def load_lesson(path: Path | str | None = None) -> Lesson:
    """Read and check a lesson file; LessonError when it is missing or malformed."""
    path = Path(path) if path is not None else lesson_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LessonError(f"Cannot read the lesson file {path}: {e}") from e
    return parse_lesson(text, str(path))


def parse_lesson(text: str, source: str = "lesson.toml") -> Lesson:
    """A Lesson from the text of a TOML lesson file; LessonError naming the line of the first problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise LessonError(_toml_message(e, text, source)) from e
    lines = text.splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if re.match(r"\s*\[\[\s*step\s*\]\]", line)]
    for key in data:
        if key not in TOP_KEYS:
            raise LessonError(f"{source}, line {_find(lines, key, 1, len(lines))}: unknown key '{key}' at the top "
                              f"(known: {', '.join(sorted(TOP_KEYS))}).")
    if not isinstance(data.get("title"), str) or not data["title"].strip():
        raise LessonError(f"{source}: the lesson needs a title at the top, e.g. title = \"Attention in 45 minutes\".")
    steps = data.get("step")
    if not isinstance(steps, list) or not steps:
        raise LessonError(f"{source}: the lesson has no steps; each starts with a line [[step]].")
    bounds = list(zip(starts, starts[1:] + [len(lines) + 1]))
    return Lesson(data["title"].strip(), tuple(_step(s, n + 1, source, lines, *bounds[n]) for n, s in enumerate(steps)),
                  str(data.get("about", "")).strip(), source)


def _toml_message(e: tomllib.TOMLDecodeError, text: str, source: str) -> str:
    """tomllib's message with the line quoted: 'lesson.toml, line 7, column 12: Invalid value ... > question = oops'."""
    found = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
    if not found:
        return f"{source}: this is not valid TOML: {e}"
    line, column = int(found.group(1)), int(found.group(2))
    what = str(e)[:found.start()].strip()
    lines = text.splitlines()
    quoted = f"\n    {lines[line - 1].strip()}" if 0 < line <= len(lines) else ""
    return (f"{source}, line {line}, column {column}: {what}.{quoted}\n(Text goes in quotes, \"like this\"; "
            f"several lines in triple quotes, \"\"\"like this\"\"\".)")


def _find(lines: list[str], key: str, start: int, end: int) -> int:
    """The number of the first line from start to end (1-based, end excluded) that sets `key`, else start."""
    for n in range(start, min(end, len(lines) + 1)):
        if re.match(rf"\s*(\[\s*step\.)?{re.escape(key)}\s*[=\]]", lines[n - 1]):
            return n
    return start


def _step(raw: dict, number: int, source: str, lines: list[str], start: int, end: int) -> Step:
    """One [[step]] table, checked: required text, a known figure and only its options, notes with known keys."""
    def fail(key: str | None, message: str):
        line = _find(lines, key, start, end) if key else start
        raise LessonError(f"{source}, line {line} (step {number}): {message}")

    for key in REQUIRED:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            fail(key if key in raw else None, f"the step needs '{key}', a text in quotes.")
    kind = raw["figure"].strip()
    if kind not in FIGURES:
        fail("figure", f"unknown figure '{kind}'. Known figures: {', '.join(FIGURES)}.")
    defaults = FIGURES[kind].options
    options = dict(defaults)
    for key, value in raw.items():
        if key in STEP_KEYS:
            continue
        if key not in defaults:
            allowed = f"its options are {', '.join(defaults)}" if defaults else "it has no options"
            fail(key, f"unknown key '{key}' (the figure '{kind}': {allowed}; a step's own keys are "
                      f"{', '.join(sorted(STEP_KEYS))}).")
        want = str if defaults[key] is None else type(defaults[key])
        if not isinstance(value, want) or isinstance(value, bool):
            fail(key, f"'{key}' must be {'a number' if want is int else 'a text in quotes'}, not {value!r}.")
        options[key] = value
    notes = raw.get("notes", {})
    wrong = sorted(set(notes) - NOTE_KEYS) if isinstance(notes, dict) else []
    if not isinstance(notes, dict) or wrong or not all(isinstance(v, str) for v in notes.values()):
        fail(wrong[0] if wrong else "notes", f"[step.notes] takes texts named {', '.join(sorted(NOTE_KEYS))}.")
    answer = raw.get("answer", "")
    if not isinstance(answer, str):
        fail("answer", "'answer' must be a text in quotes.")
    try:
        poll = parse_poll(raw)
    except ValueError as e:
        fail(str(e).split(":")[0], str(e))
    return Step(raw["title"].strip(), raw["explain"].strip(), raw["question"].strip(), kind, options, answer.strip(),
                Notes(**{k: v.strip() for k, v in notes.items()}), start, poll)
