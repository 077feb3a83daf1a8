"""The pure builders behind the positional-encoding, schedule, attention step-by-step, checkpoint and paper pages."""
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

import core
from app.figures import paper, positional, schedule, sdpa, training
from tests.helpers import pe_formula
from core.studies import paper_figures as pf


def z_of(fig, trace=0) -> np.ndarray:
    """A heatmap's z as numpy, whether Plotly keeps it as a list or a typed array."""
    return np.asarray(fig.data[trace].z, dtype=float)


# positional encoding

@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_pe_heatmap_is_the_models_table(layout):
    pe = positional.pe_table(40, 64, layout)
    expected = pe_formula(40, 64, layout).numpy()
    np.testing.assert_allclose(pe, expected, atol=1e-6)
    np.testing.assert_allclose(z_of(positional.pe_heatmap(pe, layout, grouped=False)), expected, atol=1e-6)
    # grouped (the default): every sine column of the formula, then every cosine column
    sines = expected[:, 0::2] if layout == "interleaved" else expected[:, :32]
    cosines = expected[:, 1::2] if layout == "interleaved" else expected[:, 32:]
    np.testing.assert_allclose(z_of(positional.pe_heatmap(pe, layout)), np.hstack([sines, cosines]), atol=1e-6)
    np.testing.assert_allclose(z_of(positional.dot_heatmap(pe)), expected @ expected.T, atol=1e-4)


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
def test_dot_products_depend_on_distance_only(layout):
    pe = positional.pe_table(120, 128, layout)
    curves = [positional.offset_dots(pe, p, 40) for p in (0, 17, 60)]
    np.testing.assert_allclose(curves[1], curves[0], atol=1e-3)
    np.testing.assert_allclose(curves[2], curves[0], atol=1e-3)
    assert curves[0][0] == pytest.approx(64, abs=1e-3)            # |PE(p)|^2 = d_model / 2
    assert curves[0][10] < curves[0][0] - 10                      # ...and it does change with the distance
    assert len(positional.offset_dots(pe, 100, 40)) == 20         # cut where the table ends
    fig = positional.offset_figure(pe, [0, 17, 60], 40)
    assert [t.name for t in fig.data] == ["p = 0", "p = 17", "p = 60"]


def test_default_dims_are_sines_from_fast_to_slow():
    for layout in ("interleaved", "concat"):
        dims = positional.default_dims(512, layout)
        pe = positional.pe_table(50, 512, layout)
        assert len(dims) == 4 and np.all(pe[0, dims] == 0)        # sin(0) = 0, cos(0) = 1
        assert all("sin" in positional.dimension_label(d, 512, layout) for d in dims)
    assert positional.dimension_label(3, 8, "interleaved") == "dim 3: cos, i=1"
    assert positional.dimension_label(5, 8, "concat") == "dim 5: cos, i=1"
    fig = positional.waves_figure(positional.pe_table(30, 16, "interleaved"), [0, 5])
    np.testing.assert_allclose(fig.data[1].y, pe_formula(30, 16)[:, 5].numpy(), atol=1e-6)   # cos, i=2


# learning-rate schedule

def test_schedule_values_are_the_papers():
    values = schedule.key_values(512, 4000)
    assert [schedule.sci(v) for v in values.values()] == ["1.75e-4", "6.99e-4", "6.25e-4"]
    assert values[4000] == pytest.approx(512 ** -0.5 * 4000 ** -0.5)
    assert schedule.key_values(512, 8000)[4000] == pytest.approx(values[4000] / 2 ** 1.5)


def test_schedule_curve_peaks_at_warmup():
    curve = schedule.schedule_curve(256, 1234, scale=0.5, last_step=20_000)
    assert curve.step.iloc[0] == 1 and curve.step.iloc[-1] == 20_000
    assert curve.step[curve.lr.idxmax()] == 1234
    assert curve.lr.max() == pytest.approx(core.noam_lr(1234, 256, 1234, 0.5))
    spec = schedule.schedule_chart(curve, 1234, "t", schedule.key_values(256, 1234)).to_dict()
    assert len(spec["layer"]) == 3
    logged = pd.DataFrame({"step": [1, 2], "lr": [1e-5, 2e-5]})
    assert schedule.logged_vs_formula_chart(logged, curve, "t").to_dict()["mark"]["type"] == "line"


# scaled dot-product attention

def test_sdpa_steps_on_the_textbook_example():
    s = sdpa.attention_steps([[1.0, 0.0]], [[1.0, 0.0], [-1.0, 0.0]], [[10.0], [0.0]])
    np.testing.assert_allclose(s["scores"], [[1, -1]])
    np.testing.assert_allclose(s["scaled"], [[1 / math.sqrt(2), -1 / math.sqrt(2)]])
    np.testing.assert_allclose(s["weights"], [[0.80, 0.20]], atol=0.005)   # softmax([1, -1] / sqrt 2)
    np.testing.assert_allclose(s["output"], 10 * s["weights"][:, :1])
    with pytest.raises(ValueError, match="d_k"):
        sdpa.attention_steps([[1.0, 0.0]], [[1.0, 0.0, 0.0]], [[1.0]])


def test_example_qkv_shapes_and_figure_numbers():
    ex = sdpa.example_qkv(3, 4, 2, 5)
    assert ex["Q"].shape == (3, 2) and ex["K"].shape == (4, 2) and ex["V"].shape == (4, 5)
    assert ex["Q"].iloc[0].tolist() == [1, 0] and ex["K"].iloc[1].tolist() == [-1, 0]
    s = sdpa.attention_steps(ex["Q"], ex["K"], ex["V"])
    fig = sdpa.matrix_figure(s["weights"], "w", list(ex["Q"].index), list(ex["K"].index), "Blues", False)
    np.testing.assert_allclose(z_of(fig), s["weights"])
    np.testing.assert_allclose(z_of(fig).sum(1), 1.0)


@pytest.mark.slow
def test_unscaled_softmax_collapses_and_scaled_does_not():
    q, k = sdpa.random_query_keys(1, trials=3)
    a, b = sdpa.scaled_and_unscaled(q, k)
    torch.testing.assert_close(a, b)                              # d_k = 1: nothing to scale
    table = sdpa.collapse_table([1, 16, 256, 1024], trials=100)
    unscaled = table[table.softmax == sdpa.UNSCALED].set_index("d_k")
    scaled = table[table.softmax == sdpa.SCALED].set_index("d_k")
    assert unscaled["max weight"].is_monotonic_increasing and unscaled.loc[1024, "max weight"] > 0.9
    assert scaled["max weight"].max() < 0.5 and scaled.loc[1024, "entropy (bits)"] > 2.5
    assert unscaled.loc[1024, "entropy (bits)"] < 0.5
    assert sdpa.collapse_chart(table, "max weight", 16).to_dict()["layer"]


# training log, card and snapshots

def test_read_train_log_skips_a_half_written_line(tmp_path):
    rows = [{"step": 1, "loss": 9.0, "lr": 1e-6, "tokens_per_s": 100.0},
            {"step": 2, "loss": 8.0, "lr": 2e-6, "tokens_per_s": 110.0},
            {"kind": "valid", "step": 2, "loss": 7.0, "nll": 6.5, "ppl": 665.0, "bleu": 0.5}]
    log = tmp_path / "train_log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + '\n{"step": 3, "lo')
    steps, valids = training.read_train_log(log)
    assert steps.step.tolist() == [1, 2] and valids.bleu.tolist() == [0.5]
    assert set(training.training_charts(steps, valids)) == {"loss", "lr", "tokens_per_s", "bleu", "ppl"}
    valids["source_gain"] = [0.8]                                        # logs since the source-gain check
    assert "source_gain" in training.training_charts(steps, valids)
    assert "log scale" not in json.dumps(training.training_charts(steps, valids)["tokens_per_s"].to_dict())
    slow = pd.DataFrame({"step": range(1, 52), "tokens_per_s": [100.0] * 50 + [5.0]})         # one slow step
    assert "log" not in json.dumps(training.training_charts(slow, valids)["tokens_per_s"].to_dict())
    steps.loc[len(steps)] = {"step": 3, "loss": 7.5, "lr": 3e-6, "tokens_per_s": 490_000.0}   # a GPU segment
    speed = training.training_charts(steps, valids)["tokens_per_s"].to_dict()
    assert speed["encoding"]["y"]["scale"]["type"] == "log" and "log scale" in json.dumps(speed)
    empty = training.read_train_log(tmp_path / "missing.jsonl")
    assert empty[0].empty and training.training_charts(*empty) == {}


def test_card_in_words():
    cfg = core.preset("small")
    card = {"name": "news-small", "trained_here": True, "parameters": 15_300_000,
            "data": {"prep_report": {"splits": {"train": {"pairs_out": 86361}}}},
            "training": {"steps": 12000, "epochs": 3.5, "wall_time_s": 8400, "hardware": "x86_64 CPU, 1 threads"},
            "test": {"bleu": 17.26, "chrf": 45.1}, "dev_last": {"bleu": 16.0, "ppl": 12.3}}
    text = training.describe_model(card, cfg)
    assert "86,361 sentence pairs" in text and "12,000 steps" in text and "2.3 h" in text and "x86_64" in text
    facts = training.card_facts(card)
    assert facts["Parameters"] == "15.3 M" and facts["Test BLEU"] == "17.3" and facts["Test chrF"] == "45.1"
    assert "its last segment" not in text
    card["history"] = [{"steps": "1-100"}, {"steps": "101-200"}]
    card["data"]["prep_report"]["its_balance"] = {"train_pairs": 90000}
    text = training.describe_model(card, cfg)
    assert "90,000 sentence pairs" in text and "2.3 h; its last segment on x86_64 CPU" in text
    assert "untrained" in training.describe_model({"name": "(untrained)", "trained_here": False,
                                                   "note": "untrained"}, cfg)


def test_snapshots_in_step_order(tmp_path):
    snap = tmp_path / "snapshots"
    snap.mkdir()
    for step in (300, 150, 1200):
        np.savez(snap / f"step_{step:07d}.npz", **{"0_enc_self": np.full((2, 4, 3, 3), step, np.float16)})
    (snap / ".step_0001350.npz.tmp").write_bytes(b"half")
    probe = {"src_tokens": ["▁a", "▁b", "</s>"], "tgt_tokens": ["<s>", "▁x"], "out_tokens": ["▁x", "</s>"]}
    (snap / "probes.json").write_text(json.dumps({"split": "valid", "sentences": [probe]}))
    steps = training.snapshot_steps(tmp_path)
    assert [s for s, _ in steps] == [150, 300, 1200]
    assert training.read_snapshot(steps[1][1], 0, "enc_self")[1, 2, 0, 0] == 300
    with pytest.raises(KeyError):
        training.read_snapshot(steps[0][1], 0, "cross")
    assert training.read_probes(tmp_path) == [probe]
    view = core.attention_view(training.read_probes(tmp_path)[0], "cross", maps=np.zeros((1, 1, 2, 3)))
    assert (view.rows, view.cols) == (probe["out_tokens"], probe["src_tokens"])     # a probe labels as a result does
    assert training.snapshot_steps(None) == [] and training.read_probes(tmp_path / "nothing") == []


# the paper's figures

def test_score_grid_puts_each_score_in_its_cell():
    scores = np.arange(12, dtype=float).reshape(3, 4) / 12          # layer l, head h -> (4l + h) / 12
    table = pf._table({"score": scores})
    fig = paper.score_grid_figure(table, chosen=(1, [2, 3]))
    np.testing.assert_allclose(z_of(fig), scores)
    assert list(fig.data[0].y) == [1, 2, 3] and list(fig.data[0].x) == [1, 2, 3, 4]
    assert len(fig.layout.shapes) == 2
    shown = paper.display_table(table)
    assert shown.iloc[0][["layer", "head"]].tolist() == [3, 4]       # best head, counted from 1


def test_figure_set_names_and_word_merging():
    tokens = ["▁The", "▁La", "w", "▁is", "▁it", "s", "▁own", "</s>"]
    attn = np.random.default_rng(0).dirichlet(np.ones(8), size=(2, 3, 8))
    view = pf.word_view(attn, tokens)
    figs = paper.figure_set(4, view, 1, [2, 0])
    assert list(figs) == ["figure4_full", "figure4_its"]
    assert "head 3" in figs["figure4_full"].layout.title.text and "head 1" in figs["figure4_its"].layout.title.text
    assert view.rows == ["The", "Law", "is", "its", "own", "</s>"] and view.maps.shape == (2, 3, 6, 6)
    np.testing.assert_allclose(view.maps.sum(-1), 1.0, rtol=1e-6)
    # the lines of 'its' (word 3) are drawn from the word map: its two pieces' rows averaged, columns summed
    its = figs["figure4_its"]
    drawn = {(t.meta["head"], t.meta["weight"]) for t in its.data if t.meta and "weight" in t.meta}
    expected = attn[1, :, 4:6].mean(1) @ np.eye(6)[[0, 1, 1, 2, 3, 3, 4, 5]]            # (h, 6): to each word
    assert drawn == {(h, round(float(w), 2)) for h in (2, 0) for w in expected[h] if round(float(w), 2) > 0}
    pieces = core.attention_view({"src_tokens": tokens}, "enc_self", maps=attn)
    assert list(paper.figure_set(5, pieces, 0, [1, 2])) == ["figure5_head2", "figure5_head3"]
    assert paper.figure_set(3, view, 0, []) == {}
    with pytest.raises(ValueError, match="making"):
        paper.figure_set(3, view, 0, [0])
