"""The one file transfer of the project: resumable, checked against a sha256 (or a published md5) before it is
renamed into place, with a worded error for each way it fails (offline, a missing file, a checksum that differs, a
full disk). core.datasets says what to fetch; scripts/get_data.py and the app's data button call it."""
from __future__ import annotations

import errno
import hashlib
import http.client
import os
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[int, "int | None"], None]      # (bytes so far, bytes in all or None)
CHUNK = 1 << 16


class DownloadError(Exception):
    """A download that failed or produced a wrong file, with a message saying what to do."""


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def mirrored(url: str, base_url: str | None) -> str:
    """`url` on a mirror that keeps each file under its host and path (as `wget --force-directories` lays them
    out): https://host/a/b with base https://mirror/x -> https://mirror/x/host/a/b. No base: `url` itself."""
    if not base_url:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{base_url.rstrip('/')}/{parts.netloc}{parts.path}"


def megabytes(n: int | None) -> str:
    """A byte count for a person: '3.8 MB', '1.66 GB'; 'size unknown' for None."""
    if n is None:
        return "size unknown"
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


def check_free_space(folder: Path, needed: int) -> None:
    """DownloadError before anything is written when `folder`'s disk has less than `needed` bytes free."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise DownloadError(f"Not enough free disk space: this needs about {megabytes(needed)} and the disk of the "
                            f"data folder has {megabytes(free)} free. Free some space, or set ATTN_EXPLORER_SHARED "
                            f"to a folder on a larger disk, and rerun.")


def _offline(e: urllib.error.URLError) -> bool:
    """Whether a URLError means that the host cannot be reached at all (no network, no DNS, refused)."""
    return isinstance(e.reason, (socket.gaierror, ConnectionRefusedError, OSError)) and not isinstance(
        e.reason, (socket.timeout, ConnectionResetError))


def _fetch(url: str, part: Path, progress: Progress | None, timeout: float) -> None:
    """Append the rest of `url` to `part`, asking the server to skip the bytes already there (HTTP Range)."""
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # nothing left after `have` bytes: the .part is already complete
            return
        raise
    with resp:
        if have and resp.status != 206:  # the server ignored Range: it sends the whole file again
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length else None
        done = have
        with open(part, "ab" if have else "wb") as f:
            while chunk := resp.read(CHUNK):
                f.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)
    if total is not None and part.stat().st_size != total:
        raise DownloadError(f"the connection closed early: {part.stat().st_size} of {total} bytes")


def _worded(url: str, e: Exception, part: Path) -> DownloadError:
    """The message a student understands for a failed transfer."""
    host = urllib.parse.urlsplit(url).netloc
    if isinstance(e, urllib.error.HTTPError):
        return DownloadError(f"{url}: HTTP {e.code} {e.reason}: the file is not at that address. With --base-url "
                             f"the mirror must keep each file under its host and path (docs/data.md); without it, "
                             f"the source may have moved: docs/data.md names each file's source.")
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return DownloadError(f"The disk is full while writing {part.name}. Free some space, or set "
                             f"ATTN_EXPLORER_SHARED to a folder on a larger disk; a rerun resumes where it stopped.")
    if isinstance(e, urllib.error.URLError) and _offline(e):
        return DownloadError(f"Cannot reach {host} ({e.reason}): this machine seems to be offline. Connect it to the "
                             f"internet and rerun (a download resumes where it stopped), or fetch the files on "
                             f"another machine and serve them with --base-url (docs/data.md).")
    return DownloadError(f"{url}: {e}. Rerun the command: the download resumes where it stopped.")


def download(url: str, final: Path, sha256: str | None = None, size: int | None = None, md5: str | None = None,
             progress: Progress | None = None, retries: int = 3, timeout: float = 60.0, wait: float = 2.0) -> Path:
    """Download `url` to `final` (bytes go to FINAL.part first, which a rerun resumes) and return `final`.

    The finished .part is checked against `size` and `sha256` (or, where only that is published, `md5`) and only
    then renamed to `final`; a file that differs is deleted, so nothing half-written or wrong is left. With no
    checksum known the file is kept, its sha256 printed by the caller. Transient network errors are retried
    `retries` times, each resuming; a missing file, no network at all and a full disk fail at once.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    part = final.with_name(final.name + ".part")
    if final.exists():  # finished on an earlier run (it was checked before being renamed)
        return final
    for attempt in range(1, retries + 1):
        try:
            _fetch(url, part, progress, timeout)
            break
        except (OSError, http.client.HTTPException, DownloadError) as e:  # URLError is an OSError
            fatal = (isinstance(e, urllib.error.HTTPError) and e.code < 500) or getattr(e, "errno", None) == \
                errno.ENOSPC or (isinstance(e, urllib.error.URLError) and _offline(e))
            if fatal or attempt == retries:
                raise _worded(url, e, part) from None
            time.sleep(wait * attempt)
    got = part.stat().st_size
    if size is not None and got != size:
        part.unlink()
        raise DownloadError(f"{final.name}: got {got} bytes where {size} were expected; the file was deleted. "
                            f"Rerun to download it again.")
    algorithm, expected = ("sha256", sha256) if sha256 else ("md5", md5) if md5 else (None, None)
    if expected:
        digest = file_digest(part, algorithm)
        if digest != expected.lower():
            part.unlink()
            raise DownloadError(f"{final.name}: checksum mismatch, the file is corrupt or was changed at its "
                                f"source.\n  expected {algorithm} {expected}\n  got      {algorithm} {digest}\n"
                                f"  The file was deleted (nothing is left half-written). Rerun to download it "
                                f"again; if it fails again, the source changed: see docs/data.md.")
    os.replace(part, final)
    return final
