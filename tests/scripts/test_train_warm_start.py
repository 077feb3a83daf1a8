"""scripts/train.py's bf16 runs (--precision), warm starts from a shipped checkpoint (--init-from, --rewarm), the
cool-down, and stopping a run by a signal without losing anything."""
from __future__ import annotations

import json
import shutil
import signal

import pytest

import core
from scripts import train, write_card
from core.training.run import StopSignal
from tests.helpers import run_args, train_log

@pytest.fixture(scope="module")
def parent(corpus, tmp_path_factory):
    """A 40-step fp32 run and its exported checkpoint, to warm-start from."""
    root = tmp_path_factory.mktemp("parent")
    train.main(run_args(corpus[1], root / "run", "--out", root / "ckpt", "--max-steps", 40, "--max-tokens", 256,
                        "--save-every-steps", 20, "--precision", "fp32"))
    return root / "run", root / "ckpt"


@pytest.mark.slow
def test_bf16_run_records_its_precision_and_learns(corpus, parent, tmp_path):
    run = tmp_path / "run"
    train.main(run_args(corpus[1], run, "--out", tmp_path / "ckpt", "--max-steps", 40, "--max-tokens", 256,
                        "--save-every-steps", 20, "--precision", "bf16"))
    assert json.loads((run / "run.json").read_text())["precision"] == "bf16"
    assert json.loads((tmp_path / "ckpt" / "card.json").read_text())["training"]["precision"] == "bf16"
    bf16 = [r["loss"] for _, r in sorted(train_log(run).items())]
    fp32 = [r["loss"] for _, r in sorted(train_log(parent[0]).items())]
    assert sum(bf16[-5:]) < sum(bf16[:5]) * 0.8                             # it learns
    assert sum(bf16[-5:]) == pytest.approx(sum(fp32[-5:]), rel=0.1)         # about as well as fp32 (same seed)


@pytest.mark.slow
def test_init_from_continues_steps_log_and_schedule(corpus, parent, tmp_path):
    _, ckpt = parent
    run, out = tmp_path / "run", tmp_path / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 50, "--max-tokens", 256,
                        "--init-from", ckpt, "--rewarm", 5, "--save-every-steps", 5))
    log = train_log(run)
    assert sorted(log) == list(range(1, 51))                                # the parent's 40 steps, then 10 new
    new = [log[s] for s in range(41, 51)]
    # --warmup 50 --lr-scale 0.3 from tests/helpers.FAST; d_model 32 (tiny preset)
    assert new[0]["lr"] == pytest.approx(core.noam_lr(41, 32, 50, 0.3) / 5, rel=1e-6)
    assert new[-1]["lr"] == pytest.approx(core.noam_lr(50, 32, 50, 0.3), rel=1e-6)
    # warm, not cold: its first loss is the parent's last, not a random model's
    assert new[0]["loss"] < log[1]["loss"] * 0.8
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["steps"] == 50
    own_time = json.loads((ckpt / "card.json").read_text())["training"]["wall_time_s"]   # --max-minutes count from here
    assert card["training"]["warm_start"] == {"from": str(ckpt), "step": 40, "rewarm": 5, "optimizer": "fresh Adam",
                                              "elapsed_s": own_time}

    # a benchmark of this run reads its own 10 steps, not the 40 its log inherited (they ran elsewhere, maybe on a CPU)
    from scripts.bench import bench_mfu
    assert json.loads((run / "run.json").read_text())["start_step"] == 40
    mfu = bench_mfu.main(["--run", str(run), "--peak-tflops", "0.5", "--batches", "2", "--skip", "2"])
    assert mfu["log_steps"] == 8
    assert bench_mfu.main(["--run", str(run), "--peak-tflops", "0.5", "--batches", "2", "--skip", "2",
                           "--since-step", "0"])["log_steps"] == 48


def test_a_resumed_run_cools_down_to_zero_at_max_steps(corpus, parent, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(parent[0], run)                                         # the parent's run, 40 steps done
    train.main(run_args(corpus[1], run, "--out", tmp_path / "ckpt", "--max-steps", 50, "--max-tokens", 256,
                        "--save-every-steps", 20, "--precision", "fp32", "--cooldown", 8, "--resume"))
    log = train_log(run)
    # the last 8 steps before 50 (43..50) scale the schedule by 1 - sqrt((step - 42) / 8); 0 at step 50
    for step in range(41, 51):
        factor = 1.0 if step <= 42 else 1.0 - ((step - 42) / 8) ** 0.5
        assert log[step]["lr"] == pytest.approx(core.noam_lr(step, 32, 50, 0.3) * factor, rel=1e-6, abs=1e-12)
    assert log[50]["lr"] == 0.0 and log[46]["lr"] == pytest.approx(core.noam_lr(46, 32, 50, 0.3) * 0.2929, rel=1e-3)
    card = json.loads((tmp_path / "ckpt" / "card.json").read_text())
    assert card["training"]["cooldown"] == {"steps": 8, "to_zero_at_step": 50, "shape": "1 - sqrt"}
    assert "taken down to 0 over the last 8 steps, ending at step 50" in core.describe_cooldown(
        card["training"]["cooldown"])


def test_a_cooldown_the_run_never_reached_is_not_on_the_card():
    """A run stopped by --max-minutes before or during its cool-down says so: no claim of a learning rate at 0."""
    from argparse import Namespace
    from core.training.saving import cooldown_record
    args = Namespace(cooldown=2000, max_steps=42000)
    at = lambda step: {"step": step, "elapsed_s": 0.0}                                      # noqa: E731
    assert cooldown_record(args, at(38861)) is None and cooldown_record(args, at(40000)) is None   # never begun
    assert cooldown_record(Namespace(max_steps=10), at(10)) is None                          # an older run.json
    done = cooldown_record(args, at(42000))
    assert done == {"steps": 2000, "to_zero_at_step": 42000, "shape": "1 - sqrt"}
    cut = cooldown_record(args, at(40500))
    assert cut["stopped_at_step"] == 40500
    words = core.describe_cooldown(cut)
    assert "stopped at step 40,500" in words and "50% of the schedule's learning rate left" in words
    assert "stopped" not in core.describe_cooldown(done)
    # by the clock: minutes since the warm start (its own 1,000 s do not count)
    clock = Namespace(cooldown_minutes=2.0, max_minutes=8.0)
    warm = lambda minutes: {"step": 1, "elapsed_s": 1000.0 + minutes * 60, "init": {"elapsed_s": 1000.0}}  # noqa: E731
    assert cooldown_record(clock, warm(5.9)) is None
    assert cooldown_record(clock, warm(8.0)) == {"minutes": 2.0, "to_zero_at_minute": 8.0, "shape": "1 - sqrt"}
    assert cooldown_record(clock, warm(6.5))["stopped_at_minute"] == 6.5
    assert "last 2 of 8 minutes" in core.describe_cooldown(cooldown_record(clock, warm(8.0)))
    assert "50% of the schedule's learning rate left" in core.describe_cooldown(cooldown_record(clock, warm(6.5)))


@pytest.mark.slow
def test_cooldown_minutes_follows_the_clock(corpus, parent, tmp_path):
    """--cooldown-minutes scales the schedule by 1 - sqrt of the time into the cool-down: the logged rate is the
    schedule's times a factor that only falls, ends near 0, and the card says how the run cooled down."""
    from core.training.run import clock_cooldown_factor
    from argparse import Namespace
    args = Namespace(max_minutes=4.0, cooldown_minutes=1.0)
    info = {"init": {"elapsed_s": 100.0}}
    assert [clock_cooldown_factor(args, info, 100.0 + s) for s in (0, 180, 195, 240, 300)] == \
        [1.0, 1.0, pytest.approx(0.5), 0.0, 0.0]

    run, out = tmp_path / "run", tmp_path / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-tokens", 256, "--init-from", parent[1], "--rewarm", 0,
                        "--max-minutes", 0.1, "--cooldown-minutes", 0.1, "--save-every-steps", 5))
    log = train_log(run)
    factors = [log[s]["lr"] / core.noam_lr(s, 32, 50, 0.3) for s in sorted(log) if s > 41]   # FAST's schedule
    assert len(factors) >= 3 and all(0 <= f <= 1 + 1e-9 for f in factors)
    assert all(b <= a + 1e-9 for a, b in zip(factors, factors[1:])) and factors[-1] < 0.5
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["cooldown"]["minutes"] == 0.1 and card["stopped_by"] == "max_minutes"
    with pytest.raises(SystemExit):
        train.parse_args(["--data", "d", "--run", "r", "--cooldown-minutes", "2", "--max-minutes", "1"])


def test_cooldown_needs_an_end_step():
    for extra in ([], ["--max-steps", "5"]):
        with pytest.raises(SystemExit):
            train.parse_args(["--data", "d", "--run", "r", "--cooldown", "10", *extra])
    assert train.parse_args(["--data", "d", "--run", "r", "--cooldown", "10", "--max-steps", "10"]).cooldown == 10


def test_init_from_a_checkpoint_of_another_shape_is_refused(corpus, parent, tmp_path):
    with pytest.raises(SystemExit, match="config differs.*--grow"):
        train.main(run_args(corpus[1], tmp_path / "run", "--max-steps", 1, "--init-from", parent[1],
                            "--set", "d_ff=128"))
    with pytest.raises(SystemExit, match="config differs"):                 # --grow makes d_ff larger, never smaller
        train.main(run_args(corpus[1], tmp_path / "run", "--max-steps", 1, "--init-from", parent[1],
                            "--set", "d_ff=32", "--grow"))
    with pytest.raises(SystemExit, match="only with pre-norm"):             # the parent is post-norm
        train.main(run_args(corpus[1], tmp_path / "run", "--max-steps", 1, "--init-from", parent[1],
                            "--set", "N_dec=3", "--grow"))
    with pytest.raises(SystemExit):
        train.parse_args(["--data", "d", "--run", "r", "--grow"])


def test_grow_ffn_starts_where_the_checkpoint_was(corpus, parent, tmp_path):
    run, out = tmp_path / "run", tmp_path / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 45, "--max-tokens", 256, "--precision", "fp32",
                        "--init-from", parent[1], "--rewarm", 5, "--set", "d_ff=128", "--grow"))
    log = train_log(run)
    assert log[41]["loss"] < log[1]["loss"] * 0.8                          # warm: the parent's weights, not noise
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["warm_start"]["grown"] == {"d_ff": [64, 128]}
    assert json.loads((out / "config.json").read_text())["d_ff"] == 128
    assert "FFNs widened from 64 to 128 hidden units, the new parts starting silent" in write_card.card_markdown(card)


@pytest.mark.slow
def test_a_stop_signal_ends_the_run_after_the_step_and_saves_everything(corpus, tmp_path, monkeypatch):
    class StopAfter(StopSignal):
        """The real handler, and a request that arrives when the 7th step begins."""
        checks = 0

        @property
        def requested(self):
            StopAfter.checks += 1
            return StopAfter.checks > 7 or self._requested

        @requested.setter
        def requested(self, value):
            self._requested = value

    monkeypatch.setattr(train, "StopSignal", StopAfter)
    run, out = tmp_path / "run", tmp_path / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 100, "--max-tokens", 256))
    assert max(train_log(run)) == 7
    assert json.loads((out / "card.json").read_text())["stopped_by"] == "signal"
    assert (run / "state.safetensors").exists()


def test_stop_signal_handler_sets_the_flag_and_gives_the_signal_back():
    before = signal.getsignal(signal.SIGTERM)
    stop = StopSignal()
    assert not stop.requested
    signal.raise_signal(signal.SIGTERM)
    assert stop.requested
    stop.close()
    assert signal.getsignal(signal.SIGTERM) == before
