"""What a lesson figure is: its two halves (what the class sees with the question, and the model's answer) and the
kind of figure a lesson step names (app.lesson.figures.FIGURES lists them). Pure: no Streamlit.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Before:
    """What the class sees with the question: a line of context (Markdown) and maybe a figure."""
    text: str = ""
    fig: object = None


@dataclass
class Answer:
    """What "Reveal" shows: the model's figure, what it did in numbers (Markdown), and the model's side of a class's
    poll (app.figures.classroom draws the class beside it): {"words", "weights", "head"} for a word to tap,
    {"labels", "probs"} for the next word, {"choice"} for a choice."""
    fig: object
    fact: str
    for_class: dict | None = None


@dataclass(frozen=True)
class LessonFigure:
    """One kind of lesson figure: the page it comes from, the builder that page calls for it, the options a lesson
    step may set (name -> default; None: the checkpoint's own choice), and its two halves."""
    page: str                           # the full page, a file of app/screens/
    builder: str                        # "module.function" of app/figures/ that draws the answer, as on the page
    about: str                          # one line: what the figure shows
    before: Callable                    # (model, options) -> Before
    answer: Callable                    # (model, options) -> Answer
    options: dict = field(default_factory=dict)
    depends: str = "weights"            # on the checkpoint's "weights", only its "config" (sizes), or "nothing"
    small_multiples: bool = False       # a grid of small maps: drawn at screen size also in presenter mode

    @property
    def uses_checkpoint(self) -> bool:
        """Drawn for each checkpoint (else once for all)."""
        return self.depends != "nothing"

    @property
    def learned(self) -> bool:
        """Its answer shows what training taught the checkpoint (an untrained one answers at random)."""
        return self.depends == "weights"
