#!/usr/bin/env python
"""Average the last weight saves of a training run into a checkpoint folder (paper, section 6.1).

    python scripts/average_checkpoints.py runs/news-small checkpoints/news-small --last 5

scripts/train.py does this itself when it ends; use this script after a run was stopped, or to
try another number of saves. It reads RUN/run.json (settings), RUN/state.safetensors (progress)
and RUN/saves/step_*.safetensors, and writes weights, config, tokenizer, card and log to OUT.
"""
from __future__ import annotations

import argparse
import sys
from argparse import Namespace
from pathlib import Path

from core import Tokenizer
from core.training.state import read_info
from core.training.run import read_run
from core.training.saving import export


def average(run, out, last: int = 5) -> Path:
    """Export the mean of RUN's last `last` saves to OUT with the run's settings; raises SystemExit with a message."""
    run, out = Path(run), Path(out)
    if last < 1:
        raise SystemExit("--last must be at least 1.")
    saves = sorted((run / "saves").glob("step_*.safetensors"))
    if not (run / "run.json").exists() or not saves:
        raise SystemExit(f"'{run}' is not a training run with weight saves (it needs run.json and "
                         "saves/step_*.safetensors, written by scripts/train.py --run).")
    meta, cfg = read_run(run)
    args = Namespace(**{**meta["args"], "out": str(out)})
    try:
        tokenizer = Tokenizer.from_folder(args.data)
    except (FileNotFoundError, OSError, RuntimeError) as e:
        raise SystemExit(f"The run's tokenizer comes from its data folder '{args.data}', which cannot be read "
                         f"({e}). Run this from the folder you trained in.") from None
    state = run / "state.safetensors"
    info = read_info(state) if state.exists() else {"step": int(saves[-1].stem.split("_")[1]), "epoch": 0,
                                                    "tokens": 0, "elapsed_s": 0.0}
    if len(saves) < last:
        print(f"note: only {len(saves)} saves in {run / 'saves'}, averaging those", flush=True)
    return export(run, args, cfg, tokenizer, info, meta.get("device", "unknown"), meta.get("parameters"),
                  meta.get("world", 1), k=last)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="run folder of scripts/train.py (--run)")
    p.add_argument("out", help="checkpoint folder to write (created or updated)")
    p.add_argument("--last", type=int, default=5, help="number of most recent saves to average")
    a = p.parse_args(argv)
    average(a.run, a.out, a.last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
