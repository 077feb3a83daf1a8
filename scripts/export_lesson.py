"""Write the lesson's handout: one self-contained HTML file with every step's question, then the model's answers
(its figures embedded as images, its numbers, the lesson's answer), to print or share.

    python scripts/export_lesson.py checkpoints/news-small --out handout.html
    python scripts/export_lesson.py --out handout.html                      # the app's untrained model
    python scripts/export_lesson.py checkpoints/news-small --lesson my_lesson.toml --steps 1 2 --format svg

Uses the app's lesson file (app/lesson/lesson.toml unless --lesson), its figure builders (app.lesson.figures) and the
handout of the Lesson page's download button (app.lesson.handout), so the file matches the page. Drawing the
images takes a few seconds each (kaleido), and the "Watch it learn" step trains its tiny model here (seconds to a
minute).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from app.checkpoints import UNTRAINED, untrained_model
from app.figures.export import FORMATS, export_problem
from app.figures.style import install
from app.lesson.steps import LessonError, lesson_path, load_lesson
from app.lesson.figures import FIGURES
from app.lesson.handout import handout_html, image_tag
from core import CheckpointError, load_checkpoint
from core.checkpoint import atomic_write
from scripts import cli


def answers(lesson, model, steps: list[int] | None = None, say=print) -> list:
    """(step, Before, Answer or why not) of the chosen steps (1-based; None: all), in order."""
    out = []
    for n, step in enumerate(lesson.steps, 1):
        if steps and n not in steps:
            continue
        t0, kind = time.perf_counter(), FIGURES[step.figure]
        try:
            out.append((step, kind.before(model, step.options), kind.answer(model, step.options)))
        except ValueError as e:                   # worded for the reader: the handout says it in place of the figure
            out.append((step, None, str(e)))
        say(f"step {n}: {step.title} ({time.perf_counter() - t0:.1f} s)")
    return out


def main(argv=None) -> int:
    p = cli.parser(__doc__)
    p.add_argument("checkpoint", nargs="?", help=f"a {cli.CHECKPOINT_HELP} (none: the app's untrained model)")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--lesson", default=None, help=f"the lesson file (default: {lesson_path()})")
    p.add_argument("--format", default="png", choices=list(FORMATS), help="how figures are embedded (png or svg)")
    p.add_argument("--steps", nargs="+", type=int, default=None, help="only these steps, counted from 1")
    cli.add_threads(p, default=1, help="CPU threads (default 1: one sentence at a time runs fastest on one)")
    args = p.parse_args(argv)
    cli.set_threads(args.threads)

    install()                                     # the app's readable text sizes in every figure built here
    try:
        lesson = load_lesson(args.lesson)
    except LessonError as e:
        print(f"Cannot use the lesson: {e}", file=sys.stderr)
        return 2
    if args.steps and not all(1 <= n <= len(lesson.steps) for n in args.steps):
        print(f"--steps: this lesson has steps 1 to {len(lesson.steps)}", file=sys.stderr)
        return 2
    try:
        model = load_checkpoint(args.checkpoint) if args.checkpoint else untrained_model()
    except CheckpointError as e:
        print(f"Cannot load the checkpoint: {e}", file=sys.stderr)
        return 2
    name = (model.card.name or Path(args.checkpoint).resolve().name) if args.checkpoint else UNTRAINED
    problem = export_problem(True)
    if problem:
        print(f"No handout written. {problem}", file=sys.stderr)
        return 1
    shown = answers(lesson, model, args.steps)
    try:
        text = handout_html(lesson, name, shown, image=lambda fig, alt: image_tag(fig, alt, args.format))
    except Exception as e:  # noqa: BLE001 kaleido and its browser fail in many ways; say which
        print(f"Drawing the figures failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, text)
    print(f"wrote {out} ({len(shown)} steps, {out.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
