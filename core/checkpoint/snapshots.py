"""A checkpoint's attention snapshots (its snapshots/ folder): the one reader and writer.

While it trains (core.training.probes, `--probe-every`), a run saves the attention maps of a few fixed probe
sentences every few steps, to watch heads form:

    snapshots/step_0001500.npz   compressed fp16 arrays: "<i>_enc_self", "<i>_dec_self", "<i>_cross" (probe
                                 sentence i: [layers, heads, rows, cols]) and "pronoun_<j>" (the encoder rows of
                                 the pronoun of pronoun sentence j: [layers, heads, pieces, cols])
    snapshots/probes.json        {"split": "valid",
                                  "sentences": [{"line", "src", "tgt", "src_tokens", "tgt_tokens", "out_tokens"}],
                                  "pronouns": [{"text", "src_tokens", "pronoun_index", "antecedent_index"}]}

Older folders lack "pronouns" (and the paper's sentences among "sentences"); every reader here takes them as
they are. A snapshot cut short while training wrote it (older runs), or another run's, raises SnapshotError.
"""
from __future__ import annotations

import json
import re
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .atomic import atomic_open, write_json

SNAPSHOTS = "snapshots"
PROBES_FILE = "probes.json"
STEP_FILE = re.compile(r"step_(\d+)\.npz")
KINDS = ("enc_self", "dec_self", "cross")
# what numpy and zipfile raise for a file that is truncated, damaged, not an .npz or holds pickles
_UNREADABLE = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error)


class SnapshotError(ValueError):
    """A snapshot file that cannot be read: cut short, damaged, or not a snapshot."""


def snapshot_folder(folder) -> Path:
    """The snapshots/ folder of a checkpoint folder."""
    return Path(folder) / SNAPSHOTS


def snapshot_path(folder, step: int) -> Path:
    """The file of the snapshot at `step` in a checkpoint folder (step_0001500.npz)."""
    return snapshot_folder(folder) / f"step_{int(step):07d}.npz"


def write_snapshot(folder, step: int, arrays: dict) -> Path:
    """Save one snapshot's arrays (as fp16, compressed) into folder/snapshots, atomically; returns the file."""
    path = snapshot_path(folder, step)
    with atomic_open(path, "wb") as f:
        np.savez_compressed(f, **{k: np.asarray(v).astype(np.float16, copy=False) for k, v in arrays.items()})
    return path


def write_probes(folder, sentences: list[dict], pronouns: list[dict], split: str = "valid") -> Path:
    """Write snapshots/probes.json: what the snapshots' arrays are the maps of (see the module's docstring)."""
    path = snapshot_folder(folder) / PROBES_FILE
    write_json(path, {"split": split, "sentences": sentences, "pronouns": pronouns})
    return path


def snapshot_steps(folder) -> list[tuple[int, Path]]:
    """(step, file) of every snapshot in folder/snapshots, in step order; [] without one (or for folder None).

    Temporary files of a write under way (.step_*.npz.*.tmp) are not snapshots.
    """
    snap = snapshot_folder(folder) if folder else None
    if snap is None or not snap.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in snap.iterdir() if (m := STEP_FILE.fullmatch(p.name)))


def read_probe_file(folder) -> dict:
    """snapshots/probes.json as a dict ({} when it is missing or not a JSON object)."""
    path = snapshot_folder(folder) / PROBES_FILE if folder else None
    if path is None or not path.exists():
        return {}
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return d if isinstance(d, dict) else {}


def read_probes(folder, key: str = "sentences") -> list[dict]:
    """The probe sentences of the snapshots (src, tgt and their tokens), or [] if none were recorded.

    key "pronouns": the annotated pronoun sentences whose pronoun rows the snapshots hold (core.studies.emergence).
    """
    found = read_probe_file(folder).get(key, [])
    return found if isinstance(found, list) else []


def load_snapshot(path, names=None) -> dict[str, np.ndarray]:
    """The arrays of one snapshot file as stored (fp16): all of them, or those of `names` that it has.

    Raises SnapshotError, naming the file, when it cannot be read.
    """
    try:
        with np.load(path) as npz:
            keep = npz.files if names is None else [n for n in names if n in npz.files]
            return {n: npz[n] for n in keep}
    except _UNREADABLE as e:
        raise SnapshotError(f"{path} cannot be read ({type(e).__name__}: {e}); it may have been cut short "
                            "while training wrote it") from None


def read_snapshot(path, probe: int, kind: str) -> np.ndarray:
    """One probe sentence's [layers, heads, rows, cols] maps (float32) from a snapshot file.

    KeyError if the file has no such maps; SnapshotError if it cannot be read.
    """
    name = f"{probe}_{kind}"
    return load_snapshot(path, [name])[name].astype(np.float32)


def thin_plan(sizes: list[tuple[int, int]], max_bytes: int) -> list[int]:
    """The steps to keep of (step, file size) pairs so that their files fit in max_bytes.

    As many snapshots as fit, spread evenly over the list in step order, so that the early ones (which a run writes
    more often, while heads form) stay denser than the late ones; the first and the last (the finished model) are
    always kept, and the last alone when not even two fit.
    """
    sizes = sorted(sizes)
    n = len(sizes)
    for m in range(n, 1, -1):
        keep = sorted({round(i * (n - 1) / (m - 1)) for i in range(m)})
        if sum(sizes[i][1] for i in keep) <= max_bytes:
            return [sizes[i][0] for i in keep]
    return [sizes[-1][0]] if sizes else []
