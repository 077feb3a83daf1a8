"""The snapshots/ folder (core.checkpoint.snapshots): written as training writes it, read by the app and the studies."""
import json

import numpy as np
import pytest

from core.checkpoint import snapshots as sn
from core.paths import CHECKPOINTS

PROBE = {"line": 8, "src": "a b", "tgt": "x", "src_tokens": ["▁a", "▁b", "</s>"], "tgt_tokens": ["<s>", "▁x"],
         "out_tokens": ["▁x", "</s>"]}
PRONOUN = {"text": "a b", "src_tokens": ["▁a", "▁b", "</s>"], "pronoun_index": 1, "antecedent_index": 0}


def arrays(step: int) -> dict:
    rng = np.random.default_rng(step)
    return {"0_enc_self": rng.random((2, 4, 3, 3), dtype=np.float32), "0_dec_self": rng.random((1, 4, 2, 2)),
            "0_cross": rng.random((1, 4, 2, 3)), "pronoun_0": rng.random((2, 4, 1, 3)).astype(np.float16)}


def test_round_trip(tmp_path):
    """fp16 arrays under their names, one file a step, in step order; probes.json beside them."""
    for step in (300, 150, 1200):
        path = sn.write_snapshot(tmp_path, step, arrays(step))
        assert path == tmp_path / "snapshots" / f"step_{step:07d}.npz"
    sn.write_probes(tmp_path, [PROBE], [PRONOUN])
    steps = sn.snapshot_steps(tmp_path)
    assert [s for s, _ in steps] == [150, 300, 1200]
    loaded = sn.load_snapshot(steps[0][1])
    assert list(loaded) == list(arrays(150))                                   # names, in the order written
    assert all(a.dtype == np.float16 for a in loaded.values())
    for name, a in arrays(150).items():
        np.testing.assert_array_equal(loaded[name], np.asarray(a).astype(np.float16))
    assert sn.load_snapshot(steps[0][1], ["0_cross", "7_cross"]).keys() == {"0_cross"}     # the names it has
    maps = sn.read_snapshot(steps[1][1], 0, "enc_self")
    assert maps.dtype == np.float32 and maps.shape == (2, 4, 3, 3)
    with pytest.raises(KeyError):
        sn.read_snapshot(steps[1][1], 1, "enc_self")
    assert sn.read_probes(tmp_path) == [PROBE] and sn.read_probes(tmp_path, "pronouns") == [PRONOUN]
    assert json.loads((tmp_path / "snapshots" / "probes.json").read_text())["split"] == "valid"
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == [
        "probes.json", "step_0000150.npz", "step_0000300.npz", "step_0001200.npz"]      # no temporary files left


def test_a_damaged_file_is_reported_as_unreadable(tmp_path):
    good = sn.write_snapshot(tmp_path, 150, arrays(150))
    cut = sn.snapshot_path(tmp_path, 300)
    cut.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])           # cut short
    garbage = sn.snapshot_path(tmp_path, 450)
    garbage.write_bytes(b"not a zip file")
    (tmp_path / "snapshots" / ".step_0000600.npz.1a2b3c4d.tmp").write_bytes(b"half")   # a write under way
    assert [s for s, _ in sn.snapshot_steps(tmp_path)] == [150, 300, 450]
    for path in (cut, garbage):
        with pytest.raises(sn.SnapshotError, match=path.name):
            sn.load_snapshot(path)
        with pytest.raises(ValueError):                                         # what the pages catch
            sn.read_snapshot(path, 0, "enc_self")


def test_missing_or_broken_folders_read_as_empty(tmp_path):
    assert sn.snapshot_steps(None) == [] and sn.snapshot_steps(tmp_path) == []
    assert sn.read_probes(None) == [] and sn.read_probes(tmp_path / "nothing") == []
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "probes.json").write_text("[1, 2")
    assert sn.read_probes(tmp_path) == [] and sn.read_probe_file(tmp_path) == {}
    (tmp_path / "snapshots" / "probes.json").write_text("[1, 2]")
    assert sn.read_probes(tmp_path) == []


def test_old_folders_without_pronouns_read(tmp_path):
    """Snapshots from before the pronoun rows: probes.json has no "pronouns", the files only the maps."""
    snap = tmp_path / "snapshots"
    snap.mkdir()
    np.savez_compressed(snap / "step_0000150.npz", **{"0_enc_self": np.ones((1, 1, 3, 3), np.float16)})
    (snap / "probes.json").write_text(json.dumps({"split": "valid", "sentences": [PROBE]}))
    assert sn.read_probes(tmp_path, "pronouns") == [] and sn.read_probes(tmp_path) == [PROBE]
    assert list(sn.load_snapshot(snap / "step_0000150.npz")) == ["0_enc_self"]


@pytest.mark.parametrize("name, count, pronouns", [("news-small", 79, True), ("multi30k-small", 19, False)])
def test_the_shipped_snapshots_read(name, count, pronouns, tmp_path):
    """Every shipped snapshot file is listed and the first and last read; rewriting one keeps its arrays exactly."""
    folder = CHECKPOINTS / name
    steps = sn.snapshot_steps(folder)
    assert len(steps) == count and steps[-1][0] == json.loads((folder / "card.json").read_text())["training"]["steps"]
    probes = sn.read_probes(folder)
    assert probes and all("src_tokens" in p for p in probes)
    assert bool(sn.read_probes(folder, "pronouns")) == pronouns
    for _, path in (steps[0], steps[-1]):
        shipped = sn.load_snapshot(path)
        assert {f"{i}_{k}" for i in range(len(probes)) for k in sn.KINDS} <= set(shipped)
        step = int(path.stem.split("_")[1])
        again = sn.load_snapshot(sn.write_snapshot(tmp_path, step, shipped))
        assert list(again) == list(shipped)
        assert all(np.array_equal(again[k], shipped[k]) and again[k].dtype == np.float16 for k in shipped)
