#!/usr/bin/env python
"""Thin a checkpoint's attention snapshots to a size budget before it is shipped (MAX_MB, 30 MB, unless told).

    python scripts/thin_snapshots.py runs/news-its-out                     # shows what it would remove
    python scripts/thin_snapshots.py runs/news-its-out --max-mb 30 --delete

A long run writes a snapshot every few hundred steps, ~0.4 MB each for news-small, and every shipped file stays
in the repository's history for good. This keeps as many as fit, spread evenly over the run (the first and the
last always), so the Checkpoint page's emergence curves keep their shape with fewer points. Without --delete it
only prints the plan.
"""
from __future__ import annotations

import sys
from pathlib import Path

from core.checkpoint import snapshots as sn
from scripts import cli

# A shipped checkpoint's snapshots stay in every clone for good: 30 MB keeps ~75 of news-small's ~0.4 MB ones.
MAX_MB = 30.0


def plan(folder, max_mb: float) -> tuple[list[Path], list[Path]]:
    """(files kept, files to remove) of folder's snapshots for a budget of max_mb megabytes (10^6 bytes)."""
    found = sn.snapshot_steps(folder)
    keep = set(sn.thin_plan([(step, path.stat().st_size) for step, path in found], int(max_mb * 1e6)))
    return [p for s, p in found if s in keep], [p for s, p in found if s not in keep]


def main(argv=None) -> int:
    p = cli.parser(__doc__)
    cli.add_checkpoint(p, "checkpoint folder whose snapshots/ to thin")
    p.add_argument("--max-mb", type=float, default=MAX_MB, help="size budget of the snapshot files, in MB")
    p.add_argument("--delete", action="store_true", help="remove the files the plan drops (else only print it)")
    a = p.parse_args(argv)
    if a.max_mb <= 0:
        raise SystemExit("--max-mb must be more than 0.")
    kept, dropped = plan(a.checkpoint, a.max_mb)
    if not kept:
        raise SystemExit(f"'{a.checkpoint}' has no attention snapshots (snapshots/step_*.npz): nothing to thin.")
    mb = lambda files: sum(f.stat().st_size for f in files) / 1e6        # noqa: E731
    print(f"{len(kept) + len(dropped)} snapshots, {mb(kept + dropped):.1f} MB: keeping {len(kept)} "
          f"({mb(kept):.1f} MB), {'removing' if a.delete else 'would remove'} {len(dropped)}")
    if len(kept) == 1 and mb(kept) > a.max_mb:
        print(f"note: the last snapshot alone is over {a.max_mb} MB; it is kept anyway")
    if a.delete:
        for f in dropped:
            f.unlink()
    elif dropped:
        print("nothing removed: run again with --delete to remove them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
