"""Where things live: the project's own folders, and the one place outside it that holds data.

Training and evaluation data are read in place from a folder beside the project (`../shared`: data/ for
training corpora, eval/ for evaluation-only gold files), never copied in; without such a folder, from the
user's data folder, where scripts/get_data.py puts them. This file is the only one that knows that location;
the environment variable ATTN_EXPLORER_SHARED moves it.
"""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs

REPO = Path(__file__).resolve().parents[1]      # the project folder (an editable install runs it in place)
CHECKPOINTS = REPO / "checkpoints"              # the shipped checkpoints the app lists
DATA = REPO / "data"                            # prepared corpora (scripts/prepare_data.py; git-ignored)


def shared_dir() -> Path:
    """The folder of outside data: $ATTN_EXPLORER_SHARED, else `../shared` beside the project when there is one,
    else the user's data folder (platformdirs; `python scripts/get_data.py` fills it)."""
    if os.environ.get("ATTN_EXPLORER_SHARED"):
        return Path(os.environ["ATTN_EXPLORER_SHARED"])
    beside = REPO.parent / "shared"
    return beside if beside.is_dir() else Path(platformdirs.user_data_dir("attention-explorer", appauthor=False))


def shared_data(*parts: str) -> Path:
    """A training corpus outside the project, e.g. shared_data("wmt-en-de")."""
    return shared_dir().joinpath("data", *parts)


def shared_eval(*parts: str) -> Path:
    """Evaluation-only data outside the project (never trained on), e.g. shared_eval("rwth-deen-alignment")."""
    return shared_dir().joinpath("eval", *parts)


def portable(path) -> str:
    """A path as a card records it: inside the project or in the shared folder beside it, relative to the project folder
    ("data/wmt-en-de", "../shared/data/wmt-en-de"), so that no shipped card names this machine's folders;
    anywhere else, absolute (it is still right on the machine that wrote it)."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    resolved = path.resolve()
    if resolved.is_relative_to(REPO):
        return resolved.relative_to(REPO).as_posix()
    shared = shared_dir().resolve()
    if resolved.is_relative_to(shared) and shared.is_relative_to(REPO.parent):    # ../shared, not any neighbour
        return "../" + resolved.relative_to(REPO.parent).as_posix()
    return resolved.as_posix()


def from_portable(text: str) -> Path:
    """The path a card or report recorded with `portable` (absolute ones, from older cards, as they are)."""
    path = Path(text)
    return path if path.is_absolute() else REPO / path
