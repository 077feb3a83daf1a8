"""scripts/compare_runs.py: two runs' dev scores at equal wall-clock, from logs written as train.py writes them."""
from __future__ import annotations

import json

import torch

from core import make_optimizer
from core.training.state import save_state
from scripts import compare_runs


def write_log(run, steps_per_minute: float, valid_every: int, last_step: int, ppl0: float = 100.0):
    """A train_log.jsonl of a run doing steps_per_minute, validating every valid_every steps (ppl falling)."""
    run.mkdir(parents=True)
    lines = []
    for step in range(1, last_step + 1):
        lines.append({"step": step, "loss": 5.0, "elapsed_s": round(step / steps_per_minute * 60, 2)})
        if step % valid_every == 0:
            lines.append({"kind": "valid", "step": step, "ppl": ppl0 / step, "bleu": step / 100,
                          "pronouns": {"accuracy": 0.5, "feminine": 0.25}})
    (run / "train_log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_each_run_is_read_at_the_same_minutes(tmp_path, capsys):
    write_log(tmp_path / "fast", steps_per_minute=100, valid_every=500, last_step=3000)   # at 5, 10 ... 30 min
    write_log(tmp_path / "slow", steps_per_minute=50, valid_every=500, last_step=2000)    # at 10, 20, 30, 40 min
    out = tmp_path / "cmp.json"
    assert compare_runs.main([str(tmp_path / "fast"), str(tmp_path / "slow"), "--every", "10", "--json", str(out)]) == 0
    table = json.loads(out.read_text())["table"]
    assert [row["minutes"] for row in table] == [10, 20, 30]        # up to the first run's last validation (30 min)
    fast, slow = str(tmp_path / "fast"), str(tmp_path / "slow")
    assert [row[fast]["step"] for row in table] == [1000, 2000, 3000]
    assert [row[slow]["step"] for row in table] == [500, 1000, 1500]
    printed = capsys.readouterr().out
    assert "step   3000" in printed and "pron 0.50/0.25 sep -" in printed      # an older log has no separation


def test_a_time_between_validations_takes_the_latest_before_it(tmp_path):
    write_log(tmp_path / "a", steps_per_minute=100, valid_every=700, last_step=2800)   # at 7, 14, 21, 28 min
    write_log(tmp_path / "b", steps_per_minute=100, valid_every=500, last_step=3000)   # at 5, 10 ... 30 min
    table = compare_runs.at_equal_time({"a": compare_runs.validations(tmp_path / "a"),
                                        "b": compare_runs.validations(tmp_path / "b")}, every=10)
    assert [(row["minutes"], row["a"]["step"], row["b"]["step"]) for row in table] == [(10, 700, 1000),
                                                                                      (20, 1400, 2000)]


def test_a_folder_without_a_log_or_validations_is_named(tmp_path, capsys):
    write_log(tmp_path / "ok", steps_per_minute=100, valid_every=500, last_step=1000)
    (tmp_path / "empty").mkdir()
    assert compare_runs.main([str(tmp_path / "ok"), str(tmp_path / "empty")]) == 2
    assert "empty has no train_log.jsonl" in capsys.readouterr().err
    write_log(tmp_path / "young", steps_per_minute=100, valid_every=500, last_step=400)   # no validation yet
    assert compare_runs.main([str(tmp_path / "ok"), str(tmp_path / "young")]) == 2
    assert "has no validation yet" in capsys.readouterr().err


def mark_warm_start(run, step: int):
    """A resume state, written by train.py's own save_state, of a run warm-started (--init-from) at `step`."""
    model = torch.nn.Linear(2, 2)
    opt, sched = make_optimizer(model, d_model=2, warmup=10)
    info = {"step": step + 1000, "init": {"from": "checkpoints/x", "step": step, "rewarm": 200}}
    save_state(run / "state.safetensors", model, opt, sched, info)


def test_warm_starts_from_different_steps_are_compared_from_their_own_start(tmp_path):
    write_log(tmp_path / "early", steps_per_minute=100, valid_every=500, last_step=3000)   # started at step 1000
    write_log(tmp_path / "late", steps_per_minute=50, valid_every=500, last_step=4000)    # started at step 2000
    mark_warm_start(tmp_path / "early", 1000)
    mark_warm_start(tmp_path / "late", 2000)
    runs = {name: compare_runs.validations(tmp_path / name, since_warm_start=True) for name in ("early", "late")}
    assert runs["early"][0] == {**runs["early"][0], "minutes": 0.0, "step": 1000}   # the checkpoint's own score
    assert [v["step"] for v in runs["late"]] == [2000, 2500, 3000, 3500, 4000]       # the inherited log left out
    table = compare_runs.at_equal_time(runs, every=10)
    assert [(row["minutes"], row["early"]["step"], row["late"]["step"]) for row in table] == [
        (0, 1000, 2000), (10, 2000, 2500), (20, 3000, 3000)]


def test_since_warm_start_names_a_run_that_is_not_one(tmp_path, capsys):
    write_log(tmp_path / "a", steps_per_minute=100, valid_every=500, last_step=1000)
    write_log(tmp_path / "b", steps_per_minute=100, valid_every=500, last_step=1000)
    mark_warm_start(tmp_path / "a", 500)
    assert compare_runs.main([str(tmp_path / "a"), str(tmp_path / "b"), "--since-warm-start"]) == 2
    assert "b is not a warm start" in capsys.readouterr().err
