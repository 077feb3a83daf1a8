"""Download the real WMT14 English-German data (about 1.6 GB) and build a corpus folder from it.

Usage (from the repo root, needs internet):
    python scripts/download_wmt14.py --dest data/wmt14-raw
    python scripts/prepare_data.py --corpus data/wmt14-raw/corpus --out data/wmt14
Options: --base-url URL (a mirror with the same paths), --only NAME ..., --no-extract,
         --no-verify (skip the sha256 comparison; the hash is still printed).

Downloads resume: bytes go to NAME.part and a rerun continues from its end (HTTP Range). A finished
file is checked against its sha256 and only then renamed; a mismatch deletes it and stops.
Standard library (urllib, tarfile, hashlib) plus tqdm only.
"""
from __future__ import annotations

import argparse
import hashlib
import html
import http.client
import os
import re
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

from core.checkpoint.atomic import atomic_open
from core.paths import REPO

DEFAULT_BASE_URL = "https://www.statmt.org"


class Source(NamedTuple):
    """One file to download: url = base_url + "/" + path; sha256 and size are None when unknown."""
    name: str
    path: str
    sha256: str | None
    size: int | None


# sha256 and byte sizes of the three training archives are those published in TensorFlow Datasets'
# url_checksums/wmt14_translate.txt (not re-verified here). For dev.tgz and test-full.tgz no trusted
# value is known: the script prints the computed sha256 so that you can pin it here.
SOURCES = [
    Source("europarl-v7", "wmt13/training-parallel-europarl-v7.tgz",
           "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7", 657_632_379),
    Source("commoncrawl", "wmt13/training-parallel-commoncrawl.tgz",
           "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5", 918_311_367),
    Source("news-commentary-v9", "wmt14/training-parallel-nc-v9.tgz",
           "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485", 80_418_416),
    Source("dev", "wmt14/dev.tgz", None, None),              # newstest2013 = paper's dev set
    Source("test-full", "wmt14/test-full.tgz", None, None),  # newstest2014 (full 3003 lines)
]

# Files inside the extracted archives that make up each split of the corpus folder (en, de).
LAYOUT = {
    "train": [("training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
              ("commoncrawl.de-en.en", "commoncrawl.de-en.de"),
              ("training/news-commentary-v9.de-en.en", "training/news-commentary-v9.de-en.de")],
    "valid": [("dev/newstest2013.en", "dev/newstest2013.de")],
    "test": [("test-full/newstest2014-deen-src.en.sgm", "test-full/newstest2014-deen-ref.de.sgm")],
}


class DownloadError(Exception):
    """A download that failed or produced a wrong file, with a message saying what to do."""


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _fetch(url: str, part: Path, progress: bool, timeout: float) -> None:
    """Append the rest of `url` to `part`, asking the server to skip the bytes already there."""
    from tqdm import tqdm

    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left after `have` bytes: the .part is already complete
            return
        raise
    with resp:
        if have and resp.status != 206:  # server ignored Range: it sends the whole file again
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length else None
        with open(part, "ab" if have else "wb") as f, tqdm(
                total=total, initial=have, unit="B", unit_scale=True, unit_divisor=1024,
                desc=part.name[:-5], disable=not progress) as bar:
            while chunk := resp.read(1 << 16):
                f.write(chunk)
                bar.update(len(chunk))
    if total is not None and part.stat().st_size != total:
        raise DownloadError(f"connection closed early: {part.stat().st_size} of {total} bytes")


def download(src: Source, dest: Path, base_url: str = DEFAULT_BASE_URL, verify: bool = True,
             progress: bool = True, retries: int = 3, timeout: float = 60.0) -> Path:
    """Download one Source into `dest` (resuming a .part file) and return the finished file's path.

    Retries network errors `retries` times, each time resuming. Raises DownloadError if the size
    or sha256 does not match; the bad file is deleted first so that a rerun starts clean.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    final = dest / Path(src.path).name
    part = final.with_name(final.name + ".part")
    if final.exists():  # finished on an earlier run (it was verified before being renamed)
        return final
    url = f"{base_url.rstrip('/')}/{src.path}"
    for attempt in range(1, retries + 1):
        try:
            _fetch(url, part, progress, timeout)
            break
        except (OSError, http.client.HTTPException, DownloadError) as e:  # URLError is an OSError
            if isinstance(e, urllib.error.HTTPError) and e.code < 500:
                raise DownloadError(f"{url}: HTTP {e.code} {e.reason}. Is --base-url right?") from None
            if attempt == retries:
                raise DownloadError(f"{url}: {e}. Rerun the command to resume from {part}.") from None
            print(f"{src.name}: {e}; retrying ({attempt}/{retries - 1})", file=sys.stderr)
            time.sleep(2 * attempt)
    size = part.stat().st_size
    if verify and src.size is not None and size != src.size:
        part.unlink()
        raise DownloadError(f"{src.name}: got {size} bytes, expected {src.size}; deleted {part}. "
                            f"Rerun to download it again.")
    digest = sha256_of(part)
    if src.sha256 is None or not verify:
        print(f"{src.name}: sha256 {digest} (not checked; pin it in SOURCES to verify future downloads)")
    elif digest != src.sha256.lower():
        part.unlink()
        raise DownloadError(f"{src.name}: checksum mismatch, the file is corrupt or was changed on the "
                            f"server.\n  expected sha256 {src.sha256}\n  got      sha256 {digest}\n"
                            f"  The file was deleted. Rerun to download it again; if the mirror really "
                            f"changed the file, check it and update SOURCES (or use --no-verify).")
    os.replace(part, final)
    return final


def extract(archive: Path, dest: Path) -> None:
    """Unpack a tar/tgz archive into `dest` once (a marker file remembers that it was done)."""
    marker = dest / f".{archive.name}.extracted"
    if marker.exists():
        return
    with tarfile.open(archive, "r:*") as tar:
        tar.extractall(dest, filter="data")  # "data" refuses absolute paths and ../ tricks
    marker.touch()


def _sentences(path: Path):
    """Yield the sentences of a plain text file (one a line) or of the <seg> elements of an SGML file."""
    # newline="\n": a stray "\r" inside a Common Crawl line must not split it in two.
    # errors="replace": one bad byte becomes U+FFFD instead of stopping the whole assembly.
    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        if path.suffix == ".sgm":
            yield from (html.unescape(s).strip() for s in re.findall(r"<seg[^>]*>(.*?)</seg>", f.read()))
        else:
            yield from (line.rstrip("\n") for line in f)


def assemble(raw: Path, out: Path) -> Path:
    """Concatenate the extracted files into OUT/{train,valid,test}.{en,de} (LAYOUT says which)."""
    out.mkdir(parents=True, exist_ok=True)
    for split, pairs in LAYOUT.items():
        for i, lang in enumerate(("en", "de")):
            with atomic_open(out / f"{split}.{lang}", "w", newline="\n") as f:
                for pair in pairs:
                    # A "\r" inside a line would split it for tools that read universal newlines.
                    f.writelines(s.replace("\r", " ") + "\n" for s in _sentences(raw / pair[i]))
    return out


def main(argv: list[str] | None = None, sources: list[Source] = SOURCES) -> int:
    """Command-line entry point; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--dest", type=Path, default=REPO / "data" / "wmt14-raw", help="download folder")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL, help="mirror holding the same paths")
    p.add_argument("--only", nargs="+", choices=[s.name for s in sources], help="download only these")
    p.add_argument("--no-extract", action="store_true", help="keep the archives packed (no corpus folder)")
    p.add_argument("--no-verify", action="store_true", help="do not compare sha256 values")
    args = p.parse_args(argv)
    chosen = [s for s in sources if not args.only or s.name in args.only]
    try:
        for src in chosen:
            path = download(src, args.dest, args.base_url, verify=not args.no_verify)
            if not args.no_extract and tarfile.is_tarfile(path):
                print(f"extracting {path.name} ...")
                extract(path, args.dest)
        if not args.no_extract and not args.only:
            print(f"corpus ready for prepare_data.py: {assemble(args.dest, args.dest / 'corpus')}")
    except (DownloadError, OSError, tarfile.TarError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
