"""scripts/gpu_run.sh, the one command for a lent GPU, run end to end on the CPU with the tiny preset
(under two minutes): the step benchmark, the fast path under torch.compile (its graphs captured by TorchDynamo and run
eagerly: what the command's stages need, in seconds, where aot_eager's traced backward took 40-80 s; that the compiled
step computes the eager one's loss and gradients is tests/core/training/test_fast.py's, with inductor), the budget,
evaluation and packing, so that it cannot rot between the sessions that get a GPU."""
from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile

import pytest

from core.paths import REPO
from tests.helpers import make_corpus



@pytest.mark.slow      # a minute or two: the whole GPU run on the CPU
def test_gpu_run_prepares_trains_evaluates_and_packs(tmp_path):
    raw, _ = make_corpus(tmp_path / "corpus")
    work, out = tmp_path / "work", tmp_path / "out"
    env = {**os.environ, "WORK": str(work), "OUT": str(out), "NAME": "toy-gpu", "PRESET": "tiny",
           "SET": "norm=pre", "MAX_TOKENS": "256", "WARMUP": "50", "VOCAB": "300", "LR_SCALE": "0.3",
           "BENCH": "tiny", "BENCH_SECONDS": "2", "COMPILE_BACKEND": "eager", "VALID_EVERY": "20",
           "PROBE_EVERY": "20", "EXTRA": "--threads 1 --log-every 10"}
    # half a minute: the compilation takes ~8 s of it on a CPU, and the MFU needs step lines after it (logged every 10)
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_run.sh"), "0.5", str(raw)], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    card = json.loads((work / "toy-gpu" / "card.json").read_text())
    assert card["training"]["precision"] in ("fp32", "bf16")
    assert card["training"]["steps"] > 0 and card["stopped_by"] == "max_minutes"
    # the minutes count the compilation, as a lent GPU's do
    assert card["training"]["cooldown"]["minutes"] == 0.1           # a fifth of the half minute, by default
    run = json.loads((work / "run" / "run.json").read_text())
    assert run["args"]["save_every_min"] == pytest.approx(0.02)      # a fifth of the cool-down: the saves averaged
    assert len(card["training"]["averaged_saves"]) > 1               # lie within it, not in the minutes before
    assert run["args"]["fast_used"] and run["args"]["compile_used"]   # the GPU's path, rehearsed
    log = [json.loads(line) for line in (work / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["compiled"] for r in log if r.get("kind") == "first_step"] == [True]
    bench = [json.loads(line) for line in (out / "bench.json").read_text().splitlines()]
    assert [b["preset"] for b in bench] == ["tiny"] and bench[0]["compiled"] and bench[0]["mfu"] > 0
    test = json.loads((out / "test.json").read_text())
    assert test["sentences"] == 30 and 0.0 <= test["bleu"] <= 100.0
    mfu = json.loads((out / "mfu.json").read_text())
    assert mfu["gflops_per_target_token"] > 0 and mfu["mfu"] > 0
    assert mfu["precision"] == card["training"]["precision"]

    # the parts join into the checkpoint folder, byte for byte, and all fits what a lent device returns
    parts = sorted(out.glob("toy-gpu.tar.xz.part-*"))
    assert parts and all(p.stat().st_size <= 15 * 2 ** 20 for p in parts)
    assert len(list(out.iterdir())) <= 8
    with tarfile.open(fileobj=io.BytesIO(b"".join(p.read_bytes() for p in parts)), mode="r:xz") as tar:
        member = tar.extractfile("toy-gpu/model.safetensors")
        assert member.read() == (work / "toy-gpu" / "model.safetensors").read_bytes()
    assert "gpu_run: done" in (out / "gpu_run.log").read_text()


@pytest.mark.slow
def test_gpu_run_explains_a_wrong_data_folder(tmp_path):
    env = {**os.environ, "WORK": str(tmp_path / "w")}
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_run.sh"), "1", str(tmp_path / "nothing")], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "neither prepared data" in res.stdout + res.stderr
