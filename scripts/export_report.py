"""Write one offline HTML report per sentence: every map of it (each kind of attention, layer and head, switchable in
the file), its translation, the checkpoint's name and card summary, and the date; Plotly's JavaScript inside, so the
file opens in a browser with no network and no Python (app.figures.report, as the explorer's "Download" makes it).

    python scripts/export_report.py checkpoints/news-small --out reports "The cat sat on the mat." "It rained."
    python scripts/export_report.py checkpoints/news-small --out reports --file sentences.txt

Writes reports/01_the-cat-sat-on-the-mat.html and so on (one sentence a line in --file; empty lines are skipped) and
prints each file's size (about 5 MB: Plotly's 4.8 MB and the maps).

A language model (GPT-2, Llama, BERT) gets its text's self-attention (every layer and head), its next-token guess
or its [MASK] fillers, and the head finder's grids (induction and sink scores: app/lm/report.py), scored once for
all its texts. Its maps are always by token: --pieces does not apply to it.
"""
from __future__ import annotations

import sys
from pathlib import Path

from app.figures.report import megabytes
from app.checkpoints import is_language_model
from app.lm import report as lm_report
from app.notebook import load, report
from app.url_state import slug
from core import CheckpointError
from core.checkpoint import atomic_write
from scripts import cli


def file_name(number: int, sentence: str) -> str:
    """'03_the-cat-sat-on-the.html': the sentence's number and its first words."""
    return f"{number:02d}_{slug(' '.join(sentence.split()[:6]))[:50] or 'sentence'}.html"


def write_report(tm, sentence: str, path: Path, grids: list | None, pieces: bool) -> str:
    """One sentence's report written to `path`: a language model's (grids: its head grids, scored once), else a
    translation model's."""
    if grids is None:
        return report(tm, sentence, words=not pieces, path=path)
    page = lm_report.report(tm, sentence, grids=grids)
    atomic_write(path, page)              # the project's one atomic write: never half a report on disk
    return page


def main(argv=None) -> int:
    p = cli.parser(__doc__, summary=True)
    cli.add_checkpoint(p, help="a " + cli.CHECKPOINT_HELP + ", or a folder name in checkpoints/")
    p.add_argument("sentences", nargs="*", help="English sentences (a language model's texts), one report each")
    p.add_argument("--file", help="a text file of sentences, one a line")
    p.add_argument("--out", required=True, help="folder for the HTML files")
    p.add_argument("--pieces", action="store_true", help="show the model's pieces instead of whole words")
    args = p.parse_intermixed_args(argv)          # sentences may come after the options too

    sentences = list(args.sentences)
    if args.file:
        try:
            sentences += [line.strip() for line in Path(args.file).read_text(encoding="utf-8").splitlines()]
        except OSError as e:
            print(f"Cannot read {args.file}: {e}", file=sys.stderr)
            return 2
    sentences = [s for s in sentences if s]
    if not sentences:
        print("No sentences: give them after the checkpoint, or in a file with --file.", file=sys.stderr)
        return 2
    try:
        tm = load(args.checkpoint)
    except CheckpointError as e:
        print(f"Cannot load the checkpoint: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grids = None
    if is_language_model(tm):
        if args.pieces:
            print("A language model's maps are always shown by its tokens: --pieces changes nothing.",
                  file=sys.stderr)
        print("Scoring every head (the head finder's grids) once for all the texts…")
        grids = lm_report.head_grids(tm)
    failed = 0
    for number, sentence in enumerate(sentences, 1):
        path = out / file_name(number, sentence)
        try:
            page = write_report(tm, sentence, path, grids, args.pieces)
        except ValueError as e:                     # e.g. a sentence the model cannot read: said, the rest go on
            print(f"{number}/{len(sentences)} skipped: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{number}/{len(sentences)} wrote {path} ({megabytes(len(page.encode('utf-8')))})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
