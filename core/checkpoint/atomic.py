"""The one atomic write: every file the project writes (weights, cards, logs, snapshots, prepared data) goes
through here, so a crash or a kill mid-write leaves the old file whole, never half a new one."""
from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path


@contextlib.contextmanager
def atomic_open(path, mode: str = "wb", encoding: str | None = None, newline: str | None = None):
    """Open a temporary file beside `path` for writing ("wb", or "w": UTF-8 text unless `encoding` says otherwise).

    Leaving the block normally renames it over `path` (readers see the old file or the new one, never half);
    an error deletes it and leaves `path` as it was. The new file gets the permissions `open` would give it.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes a whole new file: mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)      # 0o666 less the umask, as open() does
    try:
        text = "b" not in mode
        with os.fdopen(fd, mode, encoding=(encoding or "utf-8") if text else None, newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path, data: bytes | str) -> None:
    """Write `data` (str as UTF-8) to `path` atomically (atomic_open)."""
    with atomic_open(path, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_json(path, obj) -> None:
    """`obj` as indented UTF-8 JSON, written atomically."""
    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False))
