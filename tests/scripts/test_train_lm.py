"""scripts/train_lm.py: a short copy-task run whose induction score rises, that resumes, and that loads."""
import pytest
import json

import torch

import core
from scripts import train_lm


def _run(tmp_path, *extra):
    return train_lm.main(["--out", str(tmp_path / "out"), "--run", str(tmp_path / "run"), "--steps", "150",
                          "--every", "25", "--save-every", "25", *extra])


@pytest.mark.slow
def test_score_rises_and_checkpoint_loads(tmp_path):
    summary = _run(tmp_path)
    rows = [json.loads(x) for x in (tmp_path / "out" / "train_log.jsonl").read_text().splitlines()]
    assert summary["finished"] and rows[0]["step"] == 0 and rows[-1]["step"] == 150
    assert rows[-1]["best_induction"] > rows[0]["best_induction"] + 0.02
    lm = core.load_checkpoint(tmp_path / "out")
    assert type(lm).__name__ == "LanguageModel" and lm.card.training["steps"] == 150
    assert len(list((tmp_path / "out" / "snapshots").glob("step_*.npz"))) == len(rows)


@pytest.mark.slow
def test_resume_after_interruption_gives_the_same_weights(tmp_path):
    whole = _run(tmp_path / "a")
    part = _run(tmp_path / "b", "--stop-after", "60")
    assert not part["finished"] and part["step"] == 60
    again = _run(tmp_path / "b")
    assert again["finished"] and again["final"] == whole["final"]
    a, b = (core.load_checkpoint(tmp_path / x / "out").model.state_dict() for x in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_bf16_trains_with_fp32_weights_and_says_so_on_the_card(tmp_path):
    summary = _run(tmp_path, "--precision", "bf16", "--steps", "50")
    lm = core.load_checkpoint(tmp_path / "out")
    assert summary["finished"] and lm.card.training["precision"] == "bf16"
    assert all(p.dtype == torch.float32 for p in lm.model.parameters())
    fp32 = _run(tmp_path / "fp32", "--steps", "50")
    assert fp32["final"]["loss"] != summary["final"]["loss"]              # the bf16 matmuls did run
