"""scripts/thin_snapshots.py and core.checkpoint.snapshots.thin_plan: a checkpoint's snapshots thinned to a budget."""
import numpy as np
import pytest

from core.checkpoint import snapshots as sn
from scripts import thin_snapshots as t


def test_the_plan_spreads_evenly_and_keeps_both_ends():
    steps = list(range(150, 3150, 150))                                   # 20 snapshots of 100 bytes each
    sizes = [(s, 100) for s in steps]
    assert sn.thin_plan(sizes, 2000) == steps                             # all fit: all kept
    kept = sn.thin_plan(list(reversed(sizes)), 1000)                      # any order in, step order out
    assert len(kept) == 10 and kept[0] == 150 and kept[-1] == 3000 and kept == sorted(kept)
    gaps = np.diff([steps.index(k) for k in kept])
    assert gaps.max() - gaps.min() <= 1                                   # evenly spread over the list
    assert sn.thin_plan(sizes, 150) == [3000]                             # not two: the finished model alone
    assert sn.thin_plan(sizes, 10) == [3000]                              # even when it is over the budget
    assert sn.thin_plan([], 10) == []


def test_the_plan_counts_each_file_size():
    sizes = [(1, 10), (2, 500), (3, 10), (4, 500), (5, 10)]
    assert sn.thin_plan(sizes, 1030) == [1, 2, 3, 4, 5]
    assert sn.thin_plan(sizes, 1029) == [1, 2, 4, 5]                      # four spread evenly: 1020 bytes
    assert sn.thin_plan(sizes, 100) == [1, 3, 5]


@pytest.fixture
def folder(tmp_path):
    for step in range(100, 1100, 100):                                    # 10 snapshots
        sn.write_snapshot(tmp_path, step, {"0_enc_self": np.random.default_rng(step).random((2, 2, 40, 40))})
    sn.write_probes(tmp_path, [{"src": "a"}], [])
    return tmp_path


def test_the_script_prints_the_plan_and_removes_only_with_delete(folder, capsys):
    budget = sum(p.stat().st_size for _, p in sn.snapshot_steps(folder)) * 0.55 / 1e6
    assert t.main([str(folder), "--max-mb", str(budget)]) == 0
    assert "would remove" in capsys.readouterr().out and len(sn.snapshot_steps(folder)) == 10
    assert t.main([str(folder), "--max-mb", str(budget), "--delete"]) == 0
    left = sn.snapshot_steps(folder)
    assert 1 < len(left) < 10 and left[0][0] == 100 and left[-1][0] == 1000
    assert sum(p.stat().st_size for _, p in left) <= budget * 1e6
    assert sn.read_probes(folder) == [{"src": "a"}]                       # probes.json stays


@pytest.mark.parametrize("args, message", [(["--max-mb", "0"], "more than 0"), ([], "no attention snapshots")])
def test_clear_errors(tmp_path, args, message):
    with pytest.raises(SystemExit, match=message):
        t.main([str(tmp_path), *args])
