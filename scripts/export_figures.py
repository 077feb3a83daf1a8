"""Draw the paper's Figures 3, 4 and 5 on a checkpoint and write them to image files, with the chosen heads.

    python scripts/export_figures.py checkpoints/news-small --out figures/news-small --format png svg

Writes figure3.png, figure4_full.png, figure4_its.png, figure5_head*.png, figure{3,4,5}_scores.png
(every head's score) and heads.json (the chosen layer and heads, every head's score, and for Figures 3
and 4 whether any head links the words, in numbers and in words; layers and heads counted from 0
there, from 1 in the pictures). Figure 4 is scored on 'its' -> 'Law' (the antecedent); the best head's
share on 'application' (the next word) and its next-word score are printed beside it. Uses the app's
builders and core/paper_figures.py, so the files match the app's "The paper's figures" page.
"""
from __future__ import annotations

import sys
from pathlib import Path

from app.figures.export import FORMATS, export_problem
from app.figures.paper import describe_link, figure_set, find_heads, score_grid_figure
from app.figures.style import install
from core import CheckpointError, load_checkpoint
from core.checkpoint import write_json
from core.studies import paper_figures as pf
from scripts import cli

install()              # the app's readable text sizes in every figure built here (a Plotly template)


def build(model, label: str, words: bool = True, numbers=(3, 4, 5)) -> tuple[dict, dict]:
    """(figures by file name, JSON summary) of the paper's figures `numbers` for one TranslationModel."""
    figures, summary = {}, {"checkpoint": label, "words": words, "figures": {},
                            "numbering": "layers and heads count from 0 here; add 1 for the paper's and the pictures'"}
    for number in numbers:
        sentence = pf.FIGURES[number][1]
        result = model.attend(sentence)
        found, view = find_heads(number, result, sentence, words)
        figures.update(figure_set(number, view, found.layer, found.heads, label))
        figures[f"figure{number}_scores"] = score_grid_figure(
            found.scores, title=f"{label}: Figure {number} score of every head", chosen=(found.layer, found.heads))
        summary["figures"][str(number)] = {**found.to_dict(), "translation": result.tgt,
                                           "src_tokens": result.src_tokens, "verdict": describe_link(found)}
    return figures, summary


def write_images(figures: dict, out: Path, formats: list[str]) -> list[Path]:
    """Every figure in every format; one browser session for all of them (kaleido is slow to start)."""
    import plotly.io as pio
    figs, paths = [], []
    for name, fig in figures.items():
        for fmt in formats:
            figs.append(fig)
            paths.append(out / f"{name}.{fmt}")
    # the app lets figures fill the page; a file needs a size
    pio.write_images(figs, paths, width=[f.layout.width or 1000 for f in figs],
                     height=[f.layout.height or 600 for f in figs], scale=2)
    return paths


def main(argv=None) -> int:
    p = cli.parser(__doc__, summary=True)
    cli.add_checkpoint(p, help="a " + cli.CHECKPOINT_HELP)
    p.add_argument("--out", required=True, help="folder for the image files and heads.json")
    p.add_argument("--format", nargs="+", default=["png"], choices=list(FORMATS), help="png, svg or both")
    p.add_argument("--figures", nargs="+", type=int, default=[3, 4, 5], choices=sorted(pf.FIGURES),
                   help="which of the paper's figures (default: all three)")
    p.add_argument("--pieces", action="store_true", help="draw sub-word pieces instead of merging them into words")
    p.add_argument("--no-images", action="store_true", help="write heads.json only")
    args = p.parse_args(argv)

    try:
        model = load_checkpoint(args.checkpoint)
    except CheckpointError as e:
        print(f"Cannot load the checkpoint: {e}", file=sys.stderr)
        return 2
    label = model.card.name or Path(args.checkpoint).resolve().name
    try:
        figures, summary = build(model, label, not args.pieces, args.figures)
    except ValueError as e:
        print(f"Cannot draw the figures: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "heads.json", summary)
    for number, f in summary["figures"].items():
        best = f["scores"][0]
        print(f"Figure {number}: layer {f['layer'] + 1}, heads {[h + 1 for h in f['heads']]} "
              f"(best score {best['score']:.2f}, even attention {f['chance']:.2f}"
              + (f"; 'application' {best['→ application']:.2f}, next word {best['next word']:.2f}"
                 if number == "4" else "")
              + ("" if f["linked"] is None else f"; a link from {f['threshold']:.2f}: {'yes' if f['linked'] else 'no'}")
              + ")")
    print(f"wrote {out / 'heads.json'}")
    if args.no_images:
        return 0
    problem = export_problem(True)
    if problem:
        print(f"No image files written. {problem}", file=sys.stderr)
        return 1
    try:
        paths = write_images(figures, out, args.format)
    except Exception as e:  # noqa: BLE001 kaleido and its browser fail in many ways; say which
        print(f"Drawing the image files failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {len(paths)} image files to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
