"""scripts/pack_data.py: a prepared folder in one .tar.xz for the device's carry, and gpu_run.sh unpacking it."""
import pytest
import os
import subprocess
import tarfile

from core.paths import REPO
from scripts import pack_data
from tests.helpers import make_corpus


def test_pack_holds_the_prepared_files_byte_for_byte(tmp_path, capsys):
    _, data = make_corpus(tmp_path / "c")
    out = tmp_path / "carry" / "toy.tar.xz"
    assert pack_data.main([str(data), str(out), "--no-progress"]) == 0
    assert f"{out}: " in capsys.readouterr().out
    with tarfile.open(out) as tar:
        names = tar.getnames()
        assert sorted(names) == sorted(f"data/{n}" for n in pack_data.FILES)
        assert tar.extractfile("data/train.de").read() == (data / "train.de").read_bytes()
        assert tar.extractfile("data/spm.model").read() == (data / "spm.model").read_bytes()


def test_pack_refuses_what_would_not_fit_and_leaves_nothing(tmp_path, capsys):
    _, data = make_corpus(tmp_path / "c")
    out = tmp_path / "toy.tar.xz"
    assert pack_data.main([str(data), str(out), "--max-mib", "0.0001", "--no-progress"]) == 1
    assert "over --max-mib" in capsys.readouterr().err and not out.exists()
    (data / "spm.model").unlink()
    assert pack_data.main([str(data), str(out), "--no-progress"]) == 1
    assert "lacks spm.model" in capsys.readouterr().err


@pytest.mark.slow
def test_gpu_run_unpacks_a_packed_file(tmp_path):
    """A packed folder is unpacked under WORK before anything else (here one without spm.model: it stops there).
    Its listing is longer than a pipe holds, as a real one's decompression is slower than a pipe: a script that
    read the folder's name with `tar -t | head` died there of SIGPIPE, silently, under pipefail."""
    folder = tmp_path / "half"
    folder.mkdir()
    (folder / "valid.en").write_text("a\n")
    for i in range(3000):
        (folder / f"padding_{i:04d}.txt").write_text("")
    packed = tmp_path / "half.tar.xz"
    with tarfile.open(packed, "w:xz") as tar:
        tar.add(folder, arcname="half")
    env = {**os.environ, "WORK": str(tmp_path / "w")}
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_run.sh"), "1", str(packed)], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and (tmp_path / "w" / "unpacked" / "half" / "valid.en").read_text() == "a\n"
    assert "w/unpacked/half is neither prepared data" in res.stdout + res.stderr
