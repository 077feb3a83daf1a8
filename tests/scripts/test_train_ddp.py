"""Two CPU processes (torchrun, gloo) with --accum 1 train exactly like one process with --accum 2."""
import os
import subprocess
import sys

import pytest
import torch.distributed as dist

from core.paths import REPO
from scripts import train
from tests.helpers import assert_same_run, make_corpus, run_args

DDP = ["--max-tokens", 128, "--seed", 5, "--set", "dropout=0.0", "--max-steps", 8]


@pytest.mark.slow
@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                    reason="this PyTorch build has no torch.distributed with the gloo backend")
def test_two_processes_equal_gradient_accumulation(tmp_path):
    _, data = make_corpus(tmp_path)
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    train.main(run_args(data, single, *DDP, "--accum", 2))
    # "--" ends torchrun's own options: without it, its parser takes --run for its --run-path
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--",
           str(REPO / "scripts" / "train.py"), *run_args(data, ddp, *DDP, "--accum", 1)]
    try:
        proc = subprocess.run(cmd, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"},
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail("torchrun with 2 processes did not finish in 600 s")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "2 process(es) on cpu" in proc.stdout
    assert_same_run(single, ddp, 1, 8)     # same losses, gradient norms and final weights
