"""open_pretrained: a Hugging Face model by its Hub id (or a downloaded folder) -> a TranslationModel, converted
once into the explorer's cache folder so that a second open is instant and needs no network."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import platformdirs
import torch
from filelock import FileLock, Timeout

from core.checkpoint.folder import load_checkpoint

from .common import HFImportError
from .convert import convert_folder
from .hub import Limits, fetch, hub_id, looks_like_repo_id

def cache_root() -> Path:
    """The explorer's cache folder: $ATTN_EXPLORER_CACHE, else the platform's user cache folder
    (~/.cache/attention-explorer on Linux)."""
    return Path(os.environ.get("ATTN_EXPLORER_CACHE") or platformdirs.user_cache_dir("attention-explorer"))


def converted_dir() -> Path:
    """Where converted models live: one checkpoint folder each."""
    return cache_root() / "models"


def converted_models() -> list[Path]:
    """The converted models of the cache (whole checkpoint folders; dot-folders are conversions under way)."""
    folder = converted_dir()
    return sorted(p for p in folder.glob("*") if not p.name.startswith(".") and (p / "config.json").exists()) \
        if folder.is_dir() else []


def cache_name(source: str, revision: str | None = None, src_lang: str | None = None,
               tgt_lang: str | None = None) -> str:
    """The cache folder's name of one conversion: 'Helsinki-NLP--opus-mt-en-de', '...@v1.0', '....eng_Latn-deu_Latn'
    (a Hub id, its revision, its direction); a local folder: its name and a digest of where it is and its weights'
    time, so that a re-downloaded folder is converted afresh."""
    if looks_like_repo_id(source):
        name = source.replace("/", "--")
    else:
        folder = Path(source).resolve()
        weights = folder / "model.safetensors"
        stamp = f"{folder}@{weights.stat().st_mtime_ns if weights.exists() else ''}"
        name = f"{folder.name}--{hashlib.sha256(stamp.encode()).hexdigest()[:10]}"
    if revision:
        name += "@" + revision.replace("/", "-")
    if src_lang or tgt_lang:
        name += f".{src_lang or 'default'}-{tgt_lang or 'default'}"
    return name


def is_pretrained_source(source) -> bool:
    """Whether `source` is a Hugging Face model: a Hub id, or a folder whose config.json names a model_type (ours
    never do)."""
    config = Path(str(source)) / "config.json"
    if config.is_file():
        try:
            return "model_type" in json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
    return looks_like_repo_id(hub_id(source))


def lock_file(target: Path) -> Path:
    """The lock file of one conversion's target folder, in the explorer's cache (none beside a user's folders)."""
    digest = hashlib.sha256(str(target.resolve()).encode()).hexdigest()[:16]
    return cache_root() / "locks" / f"{target.name[:60]}-{digest}.lock"


@contextlib.contextmanager
def converting(target: Path, progress: Callable | None = None):
    """Hold the one lock on converting into `target`: an OS file lock, so that threads, processes and the replicas
    of one server sharing the cache convert a model once (the others wait, then find it); the OS releases it when
    its holder dies. Leftovers of a conversion killed midway are removed once the lock is ours."""
    path = lock_file(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress is not None:
            progress(0.0, "Another visitor or server is converting this model; waiting for it…")
        lock.acquire()
    try:
        leftover = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")   # write_checkpoint's temp folders
        for p in target.parent.glob(".*.tmp"):
            if leftover.fullmatch(p.name):
                shutil.rmtree(p, ignore_errors=True)
        yield
    finally:
        lock.release()


def _share(progress: Callable | None, start: float, end: float) -> Callable | None:
    """progress(fraction, text) for one stage of the whole: its fraction mapped into [start, end]."""
    return None if progress is None else (lambda f, text: progress(start + (end - start) * f, text))


def pretrained_checkpoint(source, revision: str | None = None, src_lang: str | None = None,
                          tgt_lang: str | None = None, out=None, dtype: torch.dtype = torch.float16,
                          limits: Limits | None = None, progress: Callable | None = None) -> Path:
    """The checkpoint folder of a Hugging Face model: `source` a Hub id (Helsinki-NLP/opus-mt-en-de) or a folder
    of its files. Converted into `out`, or, without one, into the cache (once: then found there with no network).
    src_lang / tgt_lang: the direction of a many-to-many model (NLLB eng_Latn, M2M100 en, mBART-50 en_XX).
    limits: what a download may take (hub.Limits). progress: None, or a function of (fraction, text).
    Raises HFImportError with a message that says what to do; nothing half-made is ever left behind."""
    source = hub_id(source)
    target = Path(out) if out is not None else converted_dir() / cache_name(source, revision, src_lang, tgt_lang)
    if out is None and (target / "config.json").exists():
        return target
    is_folder = Path(source).is_dir()
    if not is_folder and not looks_like_repo_id(source):
        raise HFImportError(f"'{source}' is neither a folder on this machine nor a Hugging Face model id (owner/name, "
                            "e.g. Helsinki-NLP/opus-mt-en-de).")
    with converting(target, progress):
        if out is None and (target / "config.json").exists():     # converted meanwhile by another caller
            return target
        if is_folder:
            hf_dir, extra, name = Path(source), {}, None
        else:
            fetched = fetch(source, revision, limits, _share(progress, 0.0, 0.8), target.parent)
            hf_dir, name = fetched.folder, source
            extra = {"hub": source, "revision": revision or "main", "commit": fetched.commit}
        try:
            return convert_folder(hf_dir, target, dtype, name, src_lang, tgt_lang, _share(progress, 0.8, 1.0),
                                  extra)
        except OSError:
            if out is None and (target / "config.json").exists():  # another process renamed its copy in first
                return target
            raise
        except HFImportError as e:
            if is_folder or "damaged" not in str(e):
                raise
            raise HFImportError(f"{e} Remove {hf_dir} from the Hugging Face cache and open it again to download "
                                "it afresh.") from None


def open_pretrained(source, revision: str | None = None, src_lang: str | None = None, tgt_lang: str | None = None,
                    out=None, dtype: torch.dtype = torch.float16, limits: Limits | None = None,
                    progress: Callable | None = None, device: str = "cpu"):
    """A Hugging Face translation model as a TranslationModel, by its Hub id or folder (pretrained_checkpoint):

        tm = open_pretrained("Helsinki-NLP/opus-mt-en-de")
        tm = open_pretrained("facebook/mbart-large-50-many-to-many-mmt", src_lang="en_XX", tgt_lang="de_DE")
    """
    return load_checkpoint(pretrained_checkpoint(source, revision, src_lang, tgt_lang, out, dtype, limits, progress),
                           device)
