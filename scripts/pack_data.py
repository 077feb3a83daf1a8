#!/usr/bin/env python
"""Pack a prepared data folder into one compressed file, small enough to travel to a lent GPU machine.

    python scripts/pack_data.py data/news-mix artifacts/carry/news-mix.tar.xz
    scripts/gpu_run.sh 60 artifacts/carry/news-mix.tar.xz            # on the device: unpacked, then trained on

The device's `carry` takes 64 MiB in all; text compresses well (the news mix's 890k pairs repeat their source
sentences up to ~20 times), so the packed file holds the prepared text itself (train/valid/test, spm.model,
prep_report.json), which gpu_run.sh unpacks and trains on unchanged. train.origin is left out unless --origin
(the trainer does not read it). Fails, leaving no file, if the result is over --max-mib.
"""
from __future__ import annotations

import lzma
import sys
import tarfile
from pathlib import Path

from core.checkpoint.atomic import atomic_open
from scripts import cli

FILES = ("train.en", "train.de", "valid.en", "valid.de", "test.en", "test.de", "spm.model", "prep_report.json")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("data", type=Path, help="a folder made by scripts/prepare_data.py")
    p.add_argument("out", type=Path, help="the packed file, e.g. artifacts/carry/news-mix.tar.xz")
    p.add_argument("--max-mib", type=float, default=64.0, help="fail if the packed file is larger (default: 64)")
    p.add_argument("--origin", action="store_true", help="also pack train.origin")
    cli.add_progress(p)
    return p.parse_args(argv)


def pack(args) -> dict:
    """Write args.out (tar, xz level 9); return {"files", "mib", "out"}."""
    from tqdm import tqdm

    names = FILES + (("train.origin",) if args.origin else ())
    missing = [n for n in names if not (args.data / n).is_file()]
    if missing:
        raise cli.UsageError(f"{args.data} lacks {', '.join(missing)}: pack a folder made by scripts/prepare_data.py")
    total = sum((args.data / n).stat().st_size for n in names)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(args.out, "wb") as raw, lzma.open(raw, "wb", preset=9) as xz, \
            tarfile.open(fileobj=xz, mode="w") as tar, \
            tqdm(total=total, unit="B", unit_scale=True, desc="pack", disable=args.no_progress) as bar:
        for name in names:
            tar.add(args.data / name, arcname=f"{args.data.name}/{name}")
            bar.update((args.data / name).stat().st_size)
    mib = args.out.stat().st_size / 2 ** 20
    if mib > args.max_mib:
        args.out.unlink()
        raise cli.UsageError(f"packed, {args.data} takes {mib:.1f} MiB, over --max-mib {args.max_mib:g}: "
                             "leave out origins when preparing it (--origins), or cap it (--cap)")
    return {"files": list(names), "mib": round(mib, 2), "out": str(args.out), "unpacked_mib": round(total / 2 ** 20, 1)}


def describe(result: dict) -> str:
    """One line: where, how big."""
    return (f"{result['out']}: {result['mib']} MiB ({result['unpacked_mib']} MiB unpacked, "
            f"{len(result['files'])} files)")


main = cli.command(parse_args, pack, describe, (cli.UsageError, OSError))

if __name__ == "__main__":
    sys.exit(main())
