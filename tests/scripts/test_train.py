"""Batching, training, resuming, evaluation and averaging on a tiny synthetic corpus (number words, en -> de)."""
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sacrebleu
import torch
from safetensors.torch import load_file

from core import Tokenizer, load_checkpoint, load_model
from core.checkpoint import atomic, unique_state_dict
from core.data import encode_pairs, read_parallel, token_batches
from scripts import average_checkpoints, evaluate, train, write_card
from core.training.state import read_info
from core.training.run import JsonlLog, read_run
from core.training.saving import average_saves
from core.training.validation import validate
from core.paths import REPO
from tests.helpers import assert_same_run, run_args, train_log


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    """(run, checkpoint) of 150 steps with validation, probes, 3 saves and the averaged export."""
    root = tmp_path_factory.mktemp("trained")
    run, out = root / "run", root / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 150, "--max-tokens", 256,
                        "--save-every-steps", 50, "--keep", 3, "--valid-every", 75, "--valid-sentences", 30,
                        "--bleu-sentences", 10, "--probe-every", 75))
    return run, out


RESUME = ["--max-tokens", 128, "--seed", 3, "--set", "dropout=0.1", "--save-every-steps", 5]   # dropout: RNG matters


@pytest.fixture(scope="module")
def reference_run(corpus, tmp_path_factory):
    """30 uninterrupted steps (crossing an epoch boundary) to compare resumed runs with."""
    run = tmp_path_factory.mktemp("reference") / "run"
    train.main(run_args(corpus[1], run, *RESUME, "--max-steps", 30))
    assert train_log(run)[30]["epoch"] >= 1, "the reference run should cross an epoch boundary"
    return run


# ---------------------------------------------------------------- batching

def test_token_batches_budget_coverage_and_shuffle(corpus):
    data = corpus[1]
    tok = Tokenizer.from_folder(data)
    pairs, _ = encode_pairs(tok, *read_parallel(data, "train"), eos_id=3)
    lengths = [(len(s), len(t) + 1) for s, t in pairs] + [(70, 80)]       # plus one pair over the budget
    budget = 64
    orders = {}
    for seed in (None, 1, 2):
        batches = token_batches(lengths, budget, seed=seed)
        for b in batches:
            assert len(b) == 1 or len(b) * max(max(lengths[i]) for i in b) <= budget, b
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        assert [len(lengths) - 1] in batches                             # the over-long pair is alone
        orders[seed] = batches
    assert orders[1] == token_batches(lengths, budget, seed=1)          # a seed repeats its epoch
    assert orders[1] != orders[2]
    # length bucketing: less padding than batches of the same sizes drawn in random order
    flat = [i for b in orders[1] for i in b]
    random.Random(0).shuffle(flat)
    sizes, start, random_batches = [len(b) for b in orders[1]], 0, []
    for n in sizes:
        random_batches.append(flat[start: start + n])
        start += n
    def padded(bs):
        return sum(len(b) * max(max(lengths[i]) for i in b) for b in bs)
    assert padded(orders[1]) < padded(random_batches)


# ---------------------------------------------------------------- training

def test_training_lowers_the_loss_and_exports(trained):
    run, out = trained
    losses = [r["loss"] for _, r in sorted(train_log(run).items())]
    assert len(losses) == 150
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < first / 2, (first, last)
    valid = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines() if '"valid"' in line]
    assert [v["step"] for v in valid] == [75, 150] and all("bleu" in v for v in valid)
    assert valid[-1]["source_gain"] > 0.5, valid                       # it reads its source: wrong sources cost
    for v in valid:                                                      # the contrastive pronoun test, every time
        assert set(v["pronouns"]) == {"accuracy", "feminine", "masc_neut", "separation", "feminine_lean"}
        shares = {k: x for k, x in v["pronouns"].items() if k != "feminine_lean"}     # the lean is in nats
        assert all(0.0 <= x <= 1.0 for x in shares.values()) and isinstance(v["pronouns"]["feminine_lean"], float)
    tm = load_checkpoint(out)                                            # the export is a loadable checkpoint
    saves = sorted(p.name for p in (run / "saves").glob("step_*.safetensors"))
    assert tm.card.training["steps"] == 150 and tm.card.training["averaged_saves"] == saves
    assert len(saves) == 3
    info = read_info(run / "state.safetensors")                          # epochs counted with their fraction
    assert 0 < info["pos"] < info["epoch_batches"]
    assert tm.card.training["epochs"] == round(info["epoch"] + info["pos"] / info["epoch_batches"], 2)
    assert tm.card.training["epochs"] != int(tm.card.training["epochs"])
    assert sorted(p.name for p in (out / "snapshots").glob("step_*.npz")) == ["step_0000075.npz", "step_0000150.npz"]


@pytest.mark.slow
def test_resume_gives_the_uninterrupted_run(corpus, reference_run, tmp_path):
    run = tmp_path / "run"
    train.main(run_args(corpus[1], run, *RESUME, "--max-steps", 12))
    assert read_info(run / "state.safetensors")["step"] == 12
    train.main(run_args(corpus[1], run, *RESUME, "--max-steps", 30, "--resume"))
    assert_same_run(reference_run, run, 13, 30)


@pytest.mark.slow
def test_resume_after_kill_9(corpus, reference_run, tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, str(REPO / "scripts" / "train.py"),
           *run_args(corpus[1], run, *RESUME, "--max-steps", 100000)]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state, deadline = run / "state.safetensors", time.time() + 120
    try:
        # kill once the log runs 2 steps past a state: resuming must drop and redo those steps
        while not (state.exists() and (s := read_info(state)["step"]) >= 5 and max(train_log_steps(run)) >= s + 2):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "the training subprocess wrote no state in 120 s"
            time.sleep(0.01)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    step = read_info(state)["step"]
    assert 5 <= step < 30, f"killed too late (state at step {step})"
    assert max(train_log_steps(run)) > step                           # steps after the state are logged, then dropped
    train.main(run_args(corpus[1], run, *RESUME, "--max-steps", 30, "--resume"))
    assert_same_run(reference_run, run, step + 1, 30)


def train_log_steps(run: Path) -> list[int]:
    """Steps of a log that may end in a line cut short by the kill."""
    out = []
    for line in (run / "train_log.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line)["step"])
        except json.JSONDecodeError:
            pass
    return out


def test_log_of_a_killed_run_is_cut_back_to_the_resume_step(tmp_path):
    path = tmp_path / "train_log.jsonl"
    path.write_text('{"step": 1}\n{"step": 2, "kind": "valid"}\n{"step": 3}\n{"step": 4, "lo')   # last line cut short
    log = JsonlLog(path, resume_step=2)
    log.write({"step": 3, "loss": 1.0})
    log.f.close()
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"step": 1}, {"step": 2, "kind": "valid"}, {"step": 3, "loss": 1.0}]


# ---------------------------------------------------------------- evaluation

def test_evaluate_scores_are_sacrebleus(trained, corpus, capsys, monkeypatch):
    _, ckpt = trained
    raw, data = corpus
    written = []
    real_write = evaluate.atomic_write
    for module in (evaluate, atomic):                                     # the script's writes and the card's
        monkeypatch.setattr(module, "atomic_write", lambda p, d: (written.append(Path(p).name), real_write(p, d)))
    assert evaluate.main([str(ckpt), "--no-progress", "--batch-size", "8", "--threads", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    card = json.loads((ckpt / "card.json").read_text())
    result = card["test"]
    assert printed == result and "training" in card                      # other card entries kept
    assert {"card.json", "translations.test.de"} <= set(written)          # both written atomically
    hyps = (ckpt / "translations.test.de").read_text(encoding="utf-8").split("\n")[:-1]
    refs = read_parallel(raw, "test")[1]
    assert len(hyps) == result["sentences"] == 30
    assert result["references"] == str(raw / "test.de") and result["data"] == str(data)
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    expected_bleu, expected_chrf = bleu.corpus_score(hyps, [refs]).score, chrf.corpus_score(hyps, [refs]).score
    assert result["bleu"] == round(expected_bleu, 2) and result["chrf"] == round(expected_chrf, 2)
    assert result["bleu_signature"] == str(bleu.get_signature())
    assert result["chrf_signature"] == str(chrf.get_signature())
    assert expected_bleu > 0
    # the raw (NFD) references score differently from the prepared (NFC) ones: the test tells them apart
    assert expected_chrf != sacrebleu.corpus_chrf(hyps, [read_parallel(data, "test")[1]]).score
    assert not list(ckpt.glob(".*.tmp"))


def test_evaluate_limit_and_readable_errors(trained, corpus, tmp_path, capsys):
    _, ckpt = trained
    assert evaluate.main([str(ckpt), "--split", "valid", "--limit", "5", "--beam", "1", "--no-progress",
                          "--data", str(corpus[1])]) == 0
    card = json.loads((ckpt / "card.json").read_text())
    assert card["valid"]["sentences"] == 5 and card["valid"]["beam"] == 1
    assert (ckpt / "translations.valid.de").read_text().split("\n")[2] == ""      # empty source, empty output
    assert len((ckpt / "translations.valid.de").read_text().splitlines()) == 5
    capsys.readouterr()
    assert evaluate.main([str(tmp_path / "nothing")]) == 1
    assert "no checkpoint folder" in capsys.readouterr().err
    assert evaluate.main([str(ckpt), "--data", str(tmp_path)]) == 1
    assert "test.en is missing" in capsys.readouterr().err


# ---------------------------------------------------------------- averaging

def test_average_checkpoints_is_the_elementwise_mean(trained, tmp_path):
    run, _ = trained
    a_path, b_path = sorted((run / "saves").glob("step_*.safetensors"))[-2:]
    a, b = load_file(str(a_path)), load_file(str(b_path))
    expected = {k: (a[k] + b[k]) / 2 for k in a}
    assert not torch.equal(a["src_embed.weight"], b["src_embed.weight"])
    got = average_saves([a_path, b_path])
    for k in expected:
        torch.testing.assert_close(got[k], expected[k], atol=1e-7, rtol=0)
    out = tmp_path / "avg"
    out.mkdir()
    (out / "card.json").write_text(json.dumps({"test": {"bleu": 99.0}, "pronouns": {"accuracy": 1.0},
                                               "alignment": {"aer": 0.1}, "note": "kept"}))   # stale scores
    assert average_checkpoints.main([str(run), str(out), "--last", "2"]) == 0
    state = unique_state_dict(load_model(out))
    for k in expected:                                                   # exported in fp16
        torch.testing.assert_close(state[k], expected[k].half().float(), atol=0, rtol=0, msg=k)
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["averaged_saves"] == [a_path.name, b_path.name] and card["training"]["steps"] == 150
    assert card["note"] == "kept" and not {"test", "pronouns", "alignment"} & set(card)
    with pytest.raises(SystemExit, match="not a training run"):
        average_checkpoints.main([str(tmp_path / "empty"), str(out)])


@pytest.mark.slow
def test_validation_without_a_step_limit_or_progress_bar(corpus, tmp_path):
    """--epochs (no --max-steps) with --no-progress and validation: a disabled bar of unknown length must not crash."""
    run = tmp_path / "run"
    train.main(run_args(corpus[1], run, "--epochs", 0.2, "--max-tokens", 256, "--valid-every", 2,
                        "--valid-sentences", 5, "--bleu-sentences", 2))
    lines = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    assert any(r.get("kind") == "valid" for r in lines)


def test_the_cards_data_folder_is_found_or_explained(tmp_path, monkeypatch):
    """evaluate finds the card's folder relative to the repository; a missing or unnamed one is explained."""
    (tmp_path / "data" / "mine").mkdir(parents=True)
    monkeypatch.setattr(evaluate, "REPO", tmp_path)
    assert evaluate.find_data(None, {"data": {"folder": "data/mine"}}) == tmp_path / "data" / "mine"
    assert evaluate.find_data(str(tmp_path), {}) == tmp_path                  # --data wins over the card
    with pytest.raises(evaluate.EvalError, match="'data/gone' does not exist"):
        evaluate.find_data(None, {"data": {"folder": "data/gone"}})
    with pytest.raises(evaluate.EvalError, match="does not say which data"):
        evaluate.find_data(None, {"data": "not a dict"})


def test_validation_warns_when_the_source_is_ignored(tmp_path, capsys):
    """A dev source_gain near zero after 1000 steps prints a warning that names the cure."""
    class Collapsed:
        def run(self, model):
            return {"loss": 5.0, "nll": 4.7, "ppl": 110.0, "source_gain": 0.0}
    log = JsonlLog(tmp_path / "log.jsonl", 0)
    validate(Collapsed(), None, {"step": 1000}, log, None)
    assert "ignores its source" in capsys.readouterr().out
    validate(Collapsed(), None, {"step": 250}, log, None)                # early on, no alarm yet
    assert "ignores" not in capsys.readouterr().out


def test_card_markdown_tells_how_the_model_was_made(trained):
    """CARD.md names the architecture (from config.json), the schedule and the dev source gain."""
    _, out = trained
    write_card.main([str(out), "--notes", "why: a test"])
    text = (out / "CARD.md").read_text()
    assert text.startswith("# ") and "why: a test" in text
    assert "Architecture: N=" in text and "norm=post" in text and "source gain" in text
    assert "Training ended at its --max-steps limit" in text
    assert json.loads((out / "card.json").read_text())["notes"] == "why: a test"


def test_patience_stops_when_dev_bleu_stops_improving(corpus, tmp_path, monkeypatch):
    """--patience 2: dev BLEU 5, 7, 6, 7 (no better than 7 twice) stops the run at the 4th validation."""
    from core.training.validation import Validation
    scores = iter([5.0, 7.0, 6.0, 7.0, 8.0, 9.0])
    monkeypatch.setattr(Validation, "run", lambda self, model: {
        "loss": 2.0, "nll": 1.5, "ppl": 4.5, "source_gain": 1.0, "bleu": next(scores)})
    run, out = tmp_path / "run", tmp_path / "ckpt"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 60, "--max-tokens", 256,
                        "--valid-every", 3, "--patience", 2, "--save-every-steps", 3))
    card = json.loads((out / "card.json").read_text())
    assert card["training"]["steps"] == 12
    assert card["stopped_by"] == "patience"
    assert (card["dev_best_bleu"], card["dev_best_bleu_step"]) == (7.0, 6)
    assert read_info(run / "state.safetensors")["bleu_stale"] == 2     # kept for --resume
    assert "Best dev BLEU during training: 7.0 (step 6); stopped because" in write_card.card_markdown(card)


def test_stop_reason_names_the_limit_that_ended_the_run():
    """Each limit is named; patience wins a tie; a run.json from before a limit existed still gives an answer."""
    from types import SimpleNamespace
    from core.training.run import stop_reason
    args = SimpleNamespace(max_steps=100, epochs=2.0, max_minutes=10, patience=3)
    info = {"step": 50, "bleu_stale": 0}
    assert stop_reason(args, info, epochs=1.0, elapsed=60) is None
    assert stop_reason(args, {**info, "step": 100}, 1.0, 60) == "max_steps"
    assert stop_reason(args, info, 2.0, 60) == "epochs"
    assert stop_reason(args, info, 1.0, 600) == "max_minutes"
    assert stop_reason(args, {"step": 100, "bleu_stale": 3}, 2.0, 600) == "patience"
    assert stop_reason(SimpleNamespace(max_minutes=1), {"step": 5, "bleu_stale": 9}, 0.1, 90) == "max_minutes"
    # a warm start carries the checkpoint's training time on, but its --max-minutes count from the warm start
    warm = {**info, "init": {"step": 40, "elapsed_s": 50_000.0}}
    assert stop_reason(args, warm, 1.0, 50_000.0 + 540) is None
    assert stop_reason(args, warm, 1.0, 50_000.0 + 600) == "max_minutes"


@pytest.mark.slow
def test_bench_mfu_counts_the_papers_matmuls_and_reads_the_log(trained, capsys):
    """FLOPs counted on the meta device equal 3x the forward matmuls by hand; MFU = FLOPs/token x tokens/s / peak."""
    from scripts.bench import bench_mfu
    run, _ = trained
    _, cfg = read_run(run)
    pairs = [([5] * 7, [6] * 4), ([5] * 3, [6] * 9)]            # B=2, S=7, T=10 with BOS/EOS
    per_token, padding = bench_mfu.flops_per_target_token(cfg, pairs, [(7, 5), (3, 10)], [[0, 1]])
    d, f, V, B, S, T, L, Ld = cfg.d_model, cfg.d_ff, cfg.vocab_size, 2, 7, 10, cfg.N, cfg.N_dec
    forward = (2 * B * (L * S * (4 * d * d + 2 * d * f)                  # encoder: Q, K, V, O and the FFN
                        + Ld * T * (6 * d * d + 2 * d * f) + Ld * S * 2 * d * d   # decoder; cross K, V on the source
                        + T * d * V)                                     # output projection
               + 4 * B * d * (L * S * S + Ld * T * T + Ld * T * S))      # QK^T and AV in every attention
    assert per_token == pytest.approx(3 * forward / (5 + 10))
    assert padding == pytest.approx(1 - 15 / 20)

    out = bench_mfu.main(["--run", str(run), "--peak-tflops", "0.5", "--batches", "3", "--skip", "10"])
    rates = [r["tokens_per_s"] for r in train_log(run).values()][10:]
    assert out["target_tokens_per_s"] == pytest.approx(statistics.median(rates), abs=0.05 + 1e-6)   # printed to 0.1
    assert out["log_steps"] == 140
    assert out["mfu"] == pytest.approx(out["gflops_per_target_token"] * 1e9 * out["target_tokens_per_s"] / 0.5e12,
                                       rel=1e-2)
    assert json.loads(capsys.readouterr().out)["mfu"] == out["mfu"]
    with pytest.raises(SystemExit, match="no run.json"):
        bench_mfu.main(["--run", str(run.parent / "nowhere")])


def test_snapshots_hold_the_pronoun_probes_and_the_papers_sentences(trained, corpus):
    """Probes also records the paper's two sentences (absent from this dev set) and the pronoun rows of
    core/probes/anaphora_en.jsonl; those of step 150 are the step-150 weights' attention, recomputed here."""
    import numpy as np
    from core import Transformer, TranslationModel
    from core.studies import emergence
    from core.tokenizer import word_ids
    run, out = trained
    probes = json.loads((out / "snapshots" / "probes.json").read_text())
    assert [s["line"] for s in probes["sentences"]][-2:] == [None, None]   # the paper's (this vocabulary mangles them)
    pronouns = probes["pronouns"]
    assert pronouns and all(emergence.lines_up(p["text"], p["src_tokens"]) for p in pronouns)
    _, cfg = read_run(run)
    model = Transformer(cfg)
    model.load_state_dict(load_file(str(run / "saves" / "step_0000150.safetensors")), strict=False)
    tm = TranslationModel(model.eval(), Tokenizer.from_folder(corpus[1]))
    p = pronouns[0]
    r = tm.attend(p["text"])
    rows = [i for i, w in enumerate(word_ids(r.src_tokens)) if w == p["pronoun_index"]]
    with np.load(out / "snapshots" / "step_0000150.npz") as npz:
        assert len([k for k in npz.files if k.startswith("pronoun_")]) == len(pronouns)
        np.testing.assert_allclose(npz["pronoun_0"], r.enc_self[:, :, rows], atol=2e-3)
    table, unreadable = emergence.snapshot_scores(probes, [(75, out / "snapshots" / "step_0000075.npz"),
                                                           (150, out / "snapshots" / "step_0000150.npz")])
    assert unreadable == [] and table.step.tolist() == [75, 150]
    assert table.pronoun_sentences.tolist() == [len(pronouns)] * 2 and table.hit_best.between(0, 1).all()


def test_the_fast_path_trains_on_a_cpu_and_logs_every_n_steps(corpus, tmp_path):
    """--fast on (uncompiled here; tests/scripts/test_gpu_run.py rehearses it compiled): windows of --log-every steps,
    the first step alone, and the same end as the eager loop (saves, export, card)."""
    run, out = tmp_path / "run", tmp_path / "out"
    train.main(run_args(corpus[1], run, "--out", out, "--max-steps", 12, "--max-tokens", 256,
                        "--fast", "on", "--compile", "off", "--log-every", 5))
    lines = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    steps = [r for r in lines if "tokens_per_s" in r]
    assert [r["step"] for r in steps] == [1, 5, 10, 12] and [r["steps"] for r in steps] == [1, 4, 5, 2]
    assert all(r["loss"] > 0 and r["tokens_per_s"] > 0 for r in steps)
    assert [r["compiled"] for r in lines if r.get("kind") == "first_step"] == [False]
    meta, _ = read_run(run)
    assert meta["args"]["fast_used"] and not meta["args"]["compile_used"]
    assert read_info(run / "state.safetensors")["step"] == 12 and (out / "model.safetensors").exists()
