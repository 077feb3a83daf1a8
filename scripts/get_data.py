"""Fetch the gold files and corpora that the corpus pages and training read, checked, into the app's data folder.

    python scripts/get_data.py eval        # UD English EWT dev and test, RWTH gold alignments (3.8 MB)
    python scripts/get_data.py multi30k    # Multi30k task 1 captions (1.3 MB)
    python scripts/get_data.py newstest    # newstest2013 and newstest2014, the paper's dev and test sets
    python scripts/get_data.py wmt         # newstest and the WMT14 training corpora (1.66 GB)
    python scripts/get_data.py all
    python scripts/get_data.py --list      # every file: source, licence, size, checksum
    python scripts/get_data.py --where     # the data folder the app reads

The data folder is core.paths.shared_dir(): ../shared beside the project when there is one, $ATTN_EXPLORER_SHARED
when set, else your user data folder. Downloads resume (a rerun continues a broken one); each file is checked
against its sha256 (or sacrebleu's md5) and each converted file against its own checksum or line count before it is
moved into place. The RWTH alignments are for research only: their licence is shown and must be accepted first
(--accept-licence accepts it in scripts). docs/data.md lists every source.
"""
from __future__ import annotations

import sys
from pathlib import Path

from core import datasets as ds
from core.download import DownloadError, megabytes
from core.paths import shared_dir
from scripts import cli


class LicenceNotAcceptedError(DownloadError):
    """A part was left out because its licence was not accepted."""


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("bundle", nargs="?", choices=list(ds.BUNDLES), help="what to fetch")
    p.add_argument("--base-url", help="a mirror that keeps each file under its host and path "
                                      "(https://mirror/raw.githubusercontent.com/...)")
    p.add_argument("--accept-licence", action="store_true",
                   help="accept the licences that must be accepted (the RWTH alignments: research use only)")
    p.add_argument("--dest", type=Path, help="the data folder (default: the one the app reads)")
    p.add_argument("--keep-downloads", action="store_true", help="keep the downloaded files after conversion")
    p.add_argument("--list", action="store_true", help="list every file with its source, licence and checksum")
    p.add_argument("--where", action="store_true", help="print the data folder and stop")
    cli.add_progress(p)
    args = p.parse_args(argv)
    if not (args.bundle or args.list or args.where):
        p.error("name what to fetch: " + ", ".join(ds.BUNDLES))
    return args


def accepted(part: ds.Part, args) -> bool:
    """Whether the part's licence allows the download: none needed, --accept-licence, or a yes typed here."""
    if not part.licence.must_accept or args.accept_licence:
        return True
    print(f"\n{part.title}\nLicence: {part.licence.name} ({part.licence.url})\n{part.licence.terms}")
    if not sys.stdin.isatty():
        return False
    return input("Do you accept these terms? [y/N] ").strip().lower() in ("y", "yes")


def table() -> str:
    """Every file of the table, one paragraph each."""
    lines = []
    for part in ds.PARTS.values():
        lines.append(f"{part.name}: {part.title}\n  licence: {part.licence.name}"
                     + (" (must be accepted)" if part.licence.must_accept else ""))
        for r in part.remotes:
            check = f"sha256 {r.sha256}" if r.sha256 else f"md5 {r.md5} (sacrebleu's)" if r.md5 else "no checksum"
            lines.append(f"  {r.url}\n    {megabytes(r.size)}, {check}")
    return "\n".join(lines)


def bar_for(args):
    """A progress callback drawing one tqdm bar per file (None with --no-progress)."""
    if args.no_progress:
        return None
    from tqdm import tqdm
    bars = {}

    def progress(remote, done, total):
        bar = bars.get(remote.url)
        if bar is None:
            bar = bars[remote.url] = tqdm(total=total, unit="B", unit_scale=True, desc=Path(remote.url).name)
        bar.update(done - bar.n)
        if total is not None and done >= total:
            bar.close()
    return progress


def run(args) -> list[str]:
    if args.where or args.list:
        return [str(args.dest or shared_dir())] if args.where else [table()]
    root = args.dest or shared_dir()
    done, left_out = [], []
    for name in ds.BUNDLES[args.bundle]:
        part = ds.PARTS[name]
        if ds.is_installed(part, root):
            done.append(f"{part.name}: already in place")
            continue
        if not accepted(part, args):
            left_out.append(part)
            continue
        print(f"{part.name}: {part.title} ({megabytes(part.size)})", flush=True)
        ds.install(part, root, args.base_url, bar_for(args), keep_downloads=args.keep_downloads)
        done.append(f"{part.name}: {len(part.outputs)} files checked and in place")
    if left_out:
        raise LicenceNotAcceptedError("\n".join(done + [
            f"{p.name} was not downloaded: its licence ({p.licence.name}) was not accepted. Rerun with "
            f"--accept-licence to accept it." for p in left_out]))
    return done + [f"data folder: {root}"]


def describe(lines: list[str]) -> str:
    return "\n".join(lines)


main = cli.command(parse_args, run, describe, errors=(DownloadError, OSError))

if __name__ == "__main__":
    sys.exit(main())
