"""core/paths.py: how cards record paths (portable) and read them back (from_portable)."""
from core import paths
from core.paths import REPO, from_portable, portable


def test_paths_in_the_project_or_the_shared_folder_are_relative_and_others_absolute(tmp_path, monkeypatch):
    # as on a machine with ../shared beside the project (a fresh clone has none: its data folder is the user's)
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(REPO.parent / "shared"))
    assert portable(REPO / "data" / "wmt-en-de") == "data/wmt-en-de"
    assert portable(REPO.parent / "shared" / "data" / "x") == "../shared/data/x"
    # a neighbour of the project that is not the shared folder (a pytest folder beside a clone in /tmp) stays
    # absolute: "../pytest-of-root/..." would point elsewhere from any other clone
    assert portable(REPO.parent / "elsewhere" / "x") == str((REPO.parent / "elsewhere" / "x").resolve())
    assert portable(tmp_path / "x") == str((tmp_path / "x").resolve())
    assert portable("data/x") == "data/x"
    assert from_portable("data/x") == REPO / "data" / "x"
    moved = tmp_path / "my-shared"
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(moved))
    assert paths.shared_dir() == moved
    # relative when the moved folder is beside the project, absolute elsewhere: either way it reads back right
    assert from_portable(portable(moved / "data")).resolve() == (moved / "data").resolve()


def test_without_a_shared_folder_beside_it_the_data_folder_is_the_users(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTN_EXPLORER_SHARED", raising=False)
    monkeypatch.setattr(paths, "REPO", tmp_path / "clone")                          # a fresh clone, nothing beside
    monkeypatch.setattr(paths.platformdirs, "user_data_dir", lambda app, appauthor=None: str(tmp_path / "user" / app))
    assert paths.shared_dir() == tmp_path / "user" / "attention-explorer"
    (tmp_path / "shared").mkdir()                                                     # a shared folder beside it wins
    assert paths.shared_dir() == tmp_path / "shared" and paths.shared_eval("x") == tmp_path / "shared" / "eval" / "x"
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "moved"))                # and the variable wins over both
    assert paths.shared_dir() == tmp_path / "moved"
