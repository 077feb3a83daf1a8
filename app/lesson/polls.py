"""A step's question as a poll for a class: its kind (lesson.toml's optional key `poll`), and the checks of a
student's answer. Pure: no Streamlit, no database.

    poll = "choice"                   # choice: one of `choices` (the lesson's answer: `expected`, optional)
    choices = ["ihre", "seine"]
    poll = "word"                     # word: tap a word of the step's sentence
    poll = "number"                   # number: a number
    poll = "text"                     # text: a word or a few, typed (the default)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.lesson.class_store import MAX_ANSWER, clean_text

KINDS = {"choice": "a choice among given options", "word": "a word of the step's sentence to tap",
         "number": "a number", "text": "a word or a few, typed"}
MAX_CHOICES = 8
MAX_CHOICE = 40          # characters of one option


@dataclass(frozen=True)
class Poll:
    """How the class answers a step: its kind, the options of a choice and the lesson's expected option."""
    kind: str = "text"
    choices: tuple = ()
    expected: str = ""


def parse_poll(raw: dict) -> Poll:
    """The poll of a step's TOML table (keys poll, choices, expected); ValueError naming the key that is wrong."""
    kind = raw.get("poll", "text")
    if kind not in KINDS:
        raise ValueError(f"poll: unknown kind {kind!r}. Known kinds: {', '.join(KINDS)}.")
    choices = raw.get("choices", [])
    if kind == "choice":
        if (not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES
                or not all(isinstance(c, str) and c.strip() and len(c) <= MAX_CHOICE for c in choices)
                or len({c.strip() for c in choices}) < len(choices)):
            raise ValueError(f"choices: a poll = \"choice\" needs 2 to {MAX_CHOICES} different texts of at most "
                             f"{MAX_CHOICE} characters, e.g. choices = [\"ihre\", \"seine\"].")
    elif "choices" in raw:
        raise ValueError("choices: only a poll = \"choice\" takes choices.")
    expected = raw.get("expected", "")
    if expected and (kind != "choice" or expected not in choices):
        raise ValueError("expected: the lesson's answer must be one of the step's choices.")
    return Poll(kind, tuple(c.strip() for c in choices), expected)


def sentence_words(sentence: str) -> list[str]:
    """The words a student can tap, each once: the sentence split at spaces, punctuation around a word left out."""
    words = [w.strip(".,;:!?\"'()[]") for w in sentence.split()]
    return list(dict.fromkeys(w for w in words if any(c.isalnum() for c in w)))


def check_answer(poll: Poll, text, words: list[str] | None = None) -> str:
    """A student's answer as it is kept, or ValueError worded for the student."""
    answer = clean_text(text, MAX_ANSWER)
    if not answer:
        raise ValueError("Type or pick an answer first.")
    if poll.kind == "choice" and answer not in poll.choices:
        raise ValueError(f"Pick one of: {', '.join(poll.choices)}.")
    if poll.kind == "word" and words is not None and answer not in words:
        raise ValueError("Tap one of the sentence's words.")
    if poll.kind == "number":
        try:
            value = float(answer.replace(",", ".").replace(" ", ""))
        except ValueError:
            raise ValueError(f"'{answer}' is not a number: type digits, e.g. 0.5 or 12.") from None
        if not math.isfinite(value):
            raise ValueError("Type a number such as 0.5 or 12.")
        return f"{value:g}"
    if poll.kind == "text":
        return re.sub(r"\s+", " ", answer)
    return answer


def step_sentence(figure: str, options: dict) -> str | None:
    """The sentence whose words a "word" poll offers: the step's own, else its figure's (the paper's Figures 3 and 4
    use the paper's sentence); None when the figure has no sentence."""
    from core.studies import paper_figures as pf
    paper = {"figure3": 3, "figure4": 4}
    if options.get("sentence"):
        return options["sentence"]
    return pf.FIGURES[paper[figure]][1] if figure in paper else None
