"""The one atomic write (core.checkpoint.atomic): a whole new file or the old one, never half of one."""
import json
import os
import stat

import pytest

from core.checkpoint.atomic import atomic_open, atomic_write, write_json


def test_atomic_open_leaves_nothing_on_error(tmp_path):
    """An error inside the block deletes the temporary file and writes nothing (scripts/prepare_data.py's splits)."""
    with pytest.raises(ValueError):
        with atomic_open(tmp_path / "f.txt", "w") as f:
            f.write("half")
            raise ValueError
    assert list(tmp_path.iterdir()) == []


def test_atomic_open_keeps_the_old_file_until_the_new_one_is_whole(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("old")
    with atomic_open(path, "w", newline="\n") as f:
        f.write("Grüße\n")
        assert path.read_text() == "old"                   # not replaced yet
    assert path.read_bytes() == "Grüße\n".encode()          # UTF-8 text by default
    with pytest.raises(KeyboardInterrupt):                  # a kill mid-write (Ctrl-C) keeps the old one too
        with atomic_open(path, "wb") as f:
            f.write(b"new")
            raise KeyboardInterrupt
    assert path.read_bytes() == "Grüße\n".encode() and os.listdir(tmp_path) == ["f.txt"]


def test_atomic_open_makes_folders_and_ordinary_permissions(tmp_path):
    path = tmp_path / "a" / "b" / "f.bin"
    with atomic_open(path) as f:
        f.write(b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask      # as open() would make it, not 0600
    with pytest.raises(ValueError, match="mode"):
        with atomic_open(path, "a"):
            pass


def test_atomic_write_and_write_json(tmp_path):
    atomic_write(tmp_path / "t.txt", "ä")
    atomic_write(tmp_path / "b.bin", b"\xff")
    write_json(tmp_path / "c.json", {"name": "Grüße", "n": [1, 2]})
    assert (tmp_path / "t.txt").read_bytes() == "ä".encode() and (tmp_path / "b.bin").read_bytes() == b"\xff"
    assert (tmp_path / "c.json").read_text(encoding="utf-8") == json.dumps({"name": "Grüße", "n": [1, 2]}, indent=2,
                                                                           ensure_ascii=False)
    assert sorted(os.listdir(tmp_path)) == ["b.bin", "c.json", "t.txt"]
