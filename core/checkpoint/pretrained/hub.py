"""Fetching a model from the Hugging Face Hub with huggingface_hub, the ecosystem's own client: only the files a
conversion reads (config, safetensors weights, tokenizer files), never a pickle; with no network, from the local
Hugging Face cache. Refused before any weight is downloaded: an unknown repo, an unsupported architecture, a
repo with pickled weights only, a model over the size limit or bigger than the free disk.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import errors as hub_errors
from tqdm.auto import tqdm

from .common import PICKLES, SAFE_CONVERT, HFImportError, read_json
from .convert import architecture_of

# Every file some converter reads; a repo's others (pickles, ONNX, TensorFlow, Flax weights) are never fetched.
WANTED = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "sentencepiece.bpe.model", "source.spm", "target.spm", "vocab.json",
          "vocab-src.json", "vocab-tgt.json", "merges.txt", "spiece.model")


@dataclass
class Limits:
    """What a download may take: max_bytes (None: no limit) and the disk it needs left free."""
    max_bytes: int | None = None


@dataclass
class Fetched:
    """A model's files on this machine: their folder (in the Hugging Face cache) and the commit they are of."""
    folder: Path
    commit: str | None


def offline() -> bool:
    """Whether HF_HUB_OFFLINE asks for no network (read at each call, unlike huggingface_hub's constant)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def endpoint() -> str | None:
    """$HF_ENDPOINT (a mirror, or the tests' imitation of the Hub), read at each call; None: the Hub itself."""
    return os.environ.get("HF_ENDPOINT") or None


def hub_cache() -> Path:
    """The Hugging Face cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home) / "hub"


# Ids from before the Hub had owners, which the Hub still answers by redirecting: those of a family we open. Their
# owner's form is what the caches are keyed by, so 't5-small' and 'google-t5/t5-small' are one download.
OWNERLESS = {name: f"google-t5/{name}" for name in ("t5-small", "t5-base", "t5-large", "t5-3b", "t5-11b")}


def hub_id(text: str) -> str:
    """The Hub id a user means: 't5-small' -> 'google-t5/t5-small' (OWNERLESS); any other text as it is."""
    text = str(text).strip()
    return OWNERLESS.get(text, text) if not Path(text).exists() else text


def looks_like_repo_id(text: str) -> bool:
    """'Helsinki-NLP/opus-mt-en-de' (an owner and a name; huggingface_hub's own rules), not a path on this machine."""
    if text.count("/") != 1 or Path(text).exists():
        return False
    from huggingface_hub.utils import validate_repo_id
    try:
        validate_repo_id(text)
    except hub_errors.HFValidationError:
        return False
    return True


def byte_bar(progress: Callable | None, what: str, total: int):
    """A tqdm class for huggingface_hub that also tells progress(fraction, text) how many of the `total` bytes to
    download have come (its own bar's total grows as each file starts)."""
    class Bar(tqdm):
        def update(self, n=1):
            out = super().update(n)
            if progress is not None and self.unit == "B" and "Reconstruct" in str(self.desc):
                progress(min(self.n / max(total, 1), 1.0),
                         f"Downloading {what}: {self.n / 2**20:,.1f} of {total / 2**20:,.1f} MB…")
            return out
    return Bar


def fetch(repo_id: str, revision: str | None = None, limits: Limits | None = None,
          progress: Callable | None = None, converted_to: Path | None = None) -> Fetched:
    """The files of `repo_id` a conversion needs, downloaded into the Hugging Face cache (or found there when
    offline), or HFImportError saying why not. progress: None, or a function of (fraction, text); converted_to:
    where the converted copy will go, for the check of free disk."""
    if offline():
        return from_cache(repo_id, revision, "HF_HUB_OFFLINE is set")
    from huggingface_hub import HfApi, snapshot_download     # here: the client takes 0.4 s to import
    api = HfApi(endpoint=endpoint())
    try:
        info = api.model_info(repo_id, revision=revision, files_metadata=True)
    except hub_errors.GatedRepoError:
        raise HFImportError(f"'{repo_id}' is gated on the Hugging Face Hub: accept its terms on its page, then log "
                            "in with `hf auth login` and open it again.") from None
    except hub_errors.RepositoryNotFoundError:
        raise HFImportError(f"There is no model '{repo_id}' on the Hugging Face Hub (or it is private). Check the "
                            "spelling: an id is owner/name, e.g. Helsinki-NLP/opus-mt-en-de.") from None
    except hub_errors.RevisionNotFoundError:
        raise HFImportError(f"'{repo_id}' has no revision '{revision}' (a branch, tag or commit).") from None
    except hub_errors.HfHubHTTPError as e:
        raise HFImportError(f"The Hugging Face Hub answered with an error for '{repo_id}': {e}") from None
    except Exception as e:      # no answer at all: no network, a timeout, a refused connection (the client's errors)
        return from_cache(repo_id, revision, f"the Hugging Face Hub could not be reached ({type(e).__name__})")
    sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
    wanted = check_files(repo_id, sizes)
    arch = architecture_of(read_json(download_one(repo_id, "config.json", revision)))
    missing = [n for n in arch.needed if n not in sizes]
    if missing:
        raise HFImportError(f"'{repo_id}' is a {arch.name} model but lacks {', '.join(missing)}: the explorer "
                            f"needs model.safetensors, {', '.join(arch.needed)}.")
    download = sum(sizes[n] for n in wanted)
    check_room(repo_id, download, sizes["model.safetensors"], limits or Limits(), converted_to)
    try:
        folder = snapshot_download(repo_id, revision=revision, allow_patterns=wanted, cache_dir=hub_cache(),
                                   endpoint=endpoint(), tqdm_class=byte_bar(progress, repo_id, download))
    except Exception as e:       # the client's network errors, HTTP errors, a file cut short
        raise HFImportError(f"Downloading '{repo_id}' failed ({type(e).__name__}: {e}). Nothing was converted; "
                            "open it again to resume the download.") from None
    return Fetched(Path(folder), info.sha)


def check_files(repo_id: str, sizes: dict) -> list[str]:
    """The files to download, or HFImportError for a repo without config.json or without safetensors weights."""
    names = set(sizes)
    if "config.json" not in names:
        raise HFImportError(f"'{repo_id}' has no config.json: it is not a model in the transformers format.")
    if "model.safetensors" not in names:
        pickles = sorted(n for n in names if any(Path(n).match(p) for p in PICKLES))
        if pickles:
            raise HFImportError(
                f"'{repo_id}' has its weights only as {', '.join(pickles)}: a Python pickle, which can run any code "
                "hidden inside it when loaded, so the explorer never downloads or opens it. Look for a "
                "'refs/pr/N' revision that adds model.safetensors (open it with that revision), or: "
                + SAFE_CONVERT)
        if any(Path(n).match("model-*.safetensors") for n in names):
            raise HFImportError(f"'{repo_id}' has its weights split into several model-*.safetensors files; the "
                                "explorer reads one model.safetensors.")
        raise HFImportError(f"'{repo_id}' has no model.safetensors (the weights).")
    return sorted(n for n in names if n in WANTED)


def existing(folder: Path) -> Path:
    """The folder, or the nearest of its parents that exists (a cache not made yet lies on its parent's disk)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_room(repo_id: str, download: int, weights: int, limits: Limits, converted_to: Path | None = None) -> None:
    """HFImportError when the download is over the limit, or when it (in the Hugging Face cache) and its converted
    copy (in converted_to, at most as big as the weights) would not fit on their disks."""
    if limits.max_bytes is not None and download > limits.max_bytes:
        raise HFImportError(f"'{repo_id}' is {download / 1e9:.2f} GB to download; this server allows at most "
                            f"{limits.max_bytes / 1e9:.2f} GB (ATTN_EXPLORER_HUB_MAX_GB).")
    need: dict[int, list] = {}                            # disk -> [bytes needed there, a folder on it]
    for folder, size in [(existing(hub_cache()), download), (existing(converted_to or hub_cache()), weights)]:
        disk = need.setdefault(folder.stat().st_dev, [0, folder])
        disk[0] += size
    for size, folder in need.values():
        free = shutil.disk_usage(folder).free
        if size > free:
            raise HFImportError(f"'{repo_id}' needs about {size / 1e9:.2f} GB of disk at {folder} (download and "
                                f"converted copy); {free / 1e9:.2f} GB is free. Free some space or choose a smaller "
                                "model.")


def download_one(repo_id: str, filename: str, revision: str | None) -> Path:
    """One small file of the repo (config.json), or HFImportError."""
    from huggingface_hub import hf_hub_download
    try:
        return Path(hf_hub_download(repo_id, filename, revision=revision, cache_dir=hub_cache(), endpoint=endpoint()))
    except Exception as e:       # the client's network errors, HTTP errors
        raise HFImportError(f"Downloading {filename} of '{repo_id}' failed ({type(e).__name__}: {e}).") from None


def from_cache(repo_id: str, revision: str | None, why: str) -> Fetched:
    """The files of repo_id already in the Hugging Face cache (no network), or HFImportError saying so."""
    from huggingface_hub import snapshot_download
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=list(WANTED),
                                        cache_dir=hub_cache(), local_files_only=True))
    except (hub_errors.LocalEntryNotFoundError, OSError, ValueError):
        raise HFImportError(f"'{repo_id}' cannot be downloaded now ({why}) and the Hugging Face cache "
                            f"({hub_cache()}) has no copy of it. Open it once with a network connection, "
                            "or copy its files into a folder and open the folder.") from None
    if not (folder / "config.json").exists():
        raise HFImportError(f"The Hugging Face cache has '{repo_id}' without its config.json ({why}): open it "
                            "once with a network connection.")
    check_files(repo_id, {p.name: 0 for p in folder.iterdir()})
    return Fetched(folder, folder.name)
