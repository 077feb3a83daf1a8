"""The one atomic write: every file the project writes (weights, cards, logs, snapshots) goes through here, so a
crash or a kill mid-write leaves the old file whole, never half a new one."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def atomic_write(path, data: bytes | str) -> None:
    """Write to a temporary file in the same folder, then rename it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, obj) -> None:
    """`obj` as indented UTF-8 JSON, written atomically."""
    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False))
