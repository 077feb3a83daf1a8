"""The paper-figures, positional-encoding, schedule, step-by-step and checkpoint pages, run headless with AppTest.

The app reads its checkpoints from ATTN_EXPLORER_CHECKPOINTS: here an empty folder (only the untrained
model) or one holding a tiny checkpoint with a training log and attention snapshots.
"""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core
from tests.helpers import stopping_model
from core.paths import REPO

PAGES = REPO / "app" / "screens"
NAME = "tiny-app"
PAPER_TABS = {3: "Figure 3: long distance", 4: "Figure 4: anaphora", 5: "Figure 5: structure"}   # its st.tabs
STEPS = (150, 300)


def spec(chart) -> dict:
    """A Plotly chart element's figure as JSON."""
    return json.loads(chart.proto.spec)


def page(name: str, checkpoint: str | None = None) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{name}.py"), default_timeout=60)
    if checkpoint:
        at.session_state["checkpoint"] = checkpoint
    return at.run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory, tokenizer):
    """checkpoints/tiny-app: a tiny model (stops translating at once) with card, log and two snapshots.

    Six encoder layers, like the paper's, so that its "layer 5 of 6" exists; max_len 256 so that the
    paper's sentences fit in the tiny tokenizer's many pieces. Two decoder layers, of which the first
    snapshot has only one: a model grown after step 150 (train.py --grow).
    """
    model = stopping_model(len(tokenizer), N=6, N_dec=2)
    cfg = model.cfg
    root = tmp_path_factory.mktemp("checkpoints")
    folder = root / NAME
    card = {"name": NAME, "trained_here": True, "parameters": 123_456,
            "data": {"prep_report": {"splits": {"train": {"pairs_out": 86361}}}},
            "training": {"preset": "tiny", "steps": 300, "epochs": 0.1, "wall_time_s": 600, "warmup": 100,
                         "lr_scale": 0.5, "hardware": "test CPU"},
            "dev_last": {"loss": 5.0, "nll": 4.5, "ppl": 90.0, "bleu": 1.5}, "test": {"bleu": 2.25, "chrf": 20.5}}
    core.save_checkpoint(folder, model, tokenizer, card)
    rows = [{"step": s, "epoch": 0, "loss": 9 - s / 100, "lr": core.noam_lr(s, cfg.d_model, 100, 0.5),
             "tokens_per_s": 1000.0, "grad_norm": 1.0, "elapsed_s": 2.0 * s} for s in range(1, 301)]
    rows.insert(150, {"kind": "valid", "step": 150, "loss": 6.0, "nll": 5.5, "ppl": 245.0, "bleu": 0.7})
    (folder / "train_log.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    r = core.TranslationModel(model, tokenizer).attend("the quick brown fox", tgt="der schnelle Fuchs")
    (folder / "snapshots").mkdir()
    for step in STEPS:
        arrays = {f"0_{k}": getattr(r, k).astype(np.float16) for k in ("enc_self", "dec_self", "cross")}
        if step == STEPS[0]:
            arrays = {k: a[:1] if "enc" not in k else a for k, a in arrays.items()}
        np.savez_compressed(folder / "snapshots" / f"step_{step:07d}.npz", **arrays)
    probe = {"line": 1, "src": r.src, "tgt": r.tgt, "src_tokens": r.src_tokens, "tgt_tokens": r.tgt_tokens,
             "out_tokens": r.out_tokens}
    (folder / "snapshots" / "probes.json").write_text(json.dumps({"split": "valid", "sentences": [probe]}))
    return root


@pytest.fixture
def with_tiny(tiny_folder, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_folder))
    return NAME


@pytest.fixture
def no_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))


@pytest.mark.slow
def test_lr_schedule_prints_the_papers_values_and_follows_warmup(no_checkpoints):
    at = ok(page("lr_schedule"))
    assert [m.value for m in at.metric] == ["1.75e-4", "6.99e-4", "6.25e-4"]
    assert any("no training log" in i.value for i in at.info)
    at.number_input(key="lr_warmup").set_value(8000).run()
    ok(at)
    # still warming up at steps 1000, 4000, 5000: lrate = 512^-0.5 * step * 8000^-1.5
    assert [m.value for m in at.metric] == ["6.18e-5", "2.47e-4", "3.09e-4"]
    at.select_slider(key="lr_d_model").set_value(256).run()
    assert at.metric[0].value == "8.73e-5"                     # 256^-0.5 * 1000 * 8000^-1.5


@pytest.mark.slow
def test_lr_schedule_shows_what_the_run_logged(with_tiny):
    at = ok(page("lr_schedule", with_tiny))
    assert not at.info
    assert len(at.get("vega_lite_chart")) == 3                 # the formula, logged lr vs formula, loss
    assert "warmup 100" in " ".join(m.value for m in at.markdown)


@pytest.mark.slow
def test_positional_encoding_controls_change_the_figures(no_checkpoints):
    at = ok(page("positional_encoding"))
    charts = [c for c in at.get("plotly_chart") if c.key.startswith("pe_")]      # the sines (RoPE's below them)
    assert len(charts) == 4
    matrix = next(c for c in charts if "matrix" in spec(c)["layout"]["title"]["text"])
    assert spec(matrix)["data"][0]["z"]["shape"] in ("100, 512", [100, 512])
    at.select_slider(key="pe_d_model").set_value(64).run()
    at.slider(key="pe_positions").set_value(30).run()
    ok(at)
    matrix = next(c for c in at.get("plotly_chart") if "matrix" in spec(c)["layout"]["title"]["text"])
    assert spec(matrix)["data"][0]["z"]["shape"] in ("30, 64", [30, 64])
    at.radio(key="pe_layout").set_value("concat").run()
    ok(at)
    assert at.multiselect[0].value == [0, 2, 8, 16]            # the sine dimensions in the concat layout
    at.multiselect[0].set_value([]).run()
    assert any("at least one dimension" in i.value for i in ok(at).info)


@pytest.mark.slow
def test_scaled_attention_steps_and_collapse(no_checkpoints):
    at = ok(page("scaled_attention"))
    assert len(at.dataframe) == 5                              # the Q, K and V editors; the real head's two tables
    assert at.dataframe[0].value.shape == (2, 2)
    assert len(at.get("plotly_chart")) == 5                    # scores, scaled, weights, output; the real head
    assert "Query 1 gives its weights" in " ".join(c.value for c in at.caption)
    low = float(at.metric[1].value)
    at.select_slider(key="sdpa_collapse_dk").set_value(1024).run()
    ok(at)
    assert float(at.metric[1].value) > max(low, 0.9) and float(at.metric[0].value) < 0.5
    at.number_input(key="sdpa_nq").set_value(4).run()
    assert ok(at).dataframe[0].value.shape == (4, 2)


@pytest.mark.slow
def test_checkpoint_page_without_log_or_snapshots(no_checkpoints):
    at = ok(page("checkpoint"))
    infos = " ".join(i.value for i in at.info)
    assert "no training log" in infos and "no attention snapshots" in infos


@pytest.mark.slow
def test_checkpoint_page_replays_snapshots(with_tiny):
    at = ok(page("checkpoint", with_tiny))
    facts = {m.label: m.value for m in at.metric}
    assert facts["Parameters"] == "0.1 M" and facts["Test BLEU"] == "2.2" and facts["Steps"] == "300"
    assert len(at.get("vega_lite_chart")) == 7                 # loss, lr, tokens/s, dev BLEU, dev ppl; 2 below
    # the snapshots hold no paper sentence: the page says so, and scores the final weights (diamonds)
    said = " ".join(w.value for w in at.warning) + " ".join(c.value for c in at.caption)
    assert "do not hold the Figure 4 sentence" in said and "final weights only" in said
    assert "over 1,000 random halvings the same rule hits" in said          # how much the one halving decides
    assert "86,361 sentence pairs" in at.markdown[0].value
    slider = at.select_slider(key="snap_step")
    assert [int(o) for o in slider.options] == list(STEPS) and int(slider.value) == STEPS[-1]
    def title():
        return spec(at.get("plotly_chart")[-1])["layout"]["title"]["text"]
    assert title().startswith("Step 300")
    # words first, as on every other map; the model's pieces one switch away
    def rows():
        return spec(at.get("plotly_chart")[-1])["layout"]["yaxis"]["ticktext"]
    assert at.toggle(key="snap_words").value is True and any("Whole words" in c.value for c in at.caption)
    assert not any(t.startswith("▁") for t in rows())
    ok(at.toggle(key="snap_words").set_value(False).run())
    assert any(t.startswith("▁") for t in rows()) and any("Subword pieces" in c.value for c in at.caption)
    at.toggle(key="snap_words").set_value(True).run()
    slider.set_value(150).run()
    assert ok(at) and title().startswith("Step 150")
    at.selectbox(key="snap_kind").set_value("cross").run()
    assert "encoder-decoder" in title()
    at.selectbox(key="snap_layer").set_value(1).run()            # a decoder layer added after step 150
    assert ok(at) and not at.error and "the decoder had 1 of its 2 layers: layer 2 was added later" in at.info[-1].value
    slider.set_value(300).run()
    assert ok(at) and title().startswith("Step 300") and "layer 2" in title()


def paper_tab(figure: int, checkpoint: str) -> AppTest:
    """The paper's figures page opened on Figure `figure`'s tab (the page draws the open tab alone)."""
    at = AppTest.from_file(str(PAGES / "paper_figures.py"), default_timeout=60)
    at.session_state["checkpoint"] = checkpoint
    at.session_state["pf_tab"] = PAPER_TABS[figure]
    return ok(at.run())


@pytest.mark.slow
def test_paper_figures_page_finds_and_draws_heads(with_tiny):
    at = ok(page("paper_figures", with_tiny))
    assert not at.error
    assert "index 4 (0-based)" in " ".join(c.value for c in at.caption)
    assert [s.key for s in at.selectbox if s.key.startswith("pf")] == [f"pf3_layer_{NAME}"]     # the open tab alone
    verdicts, layers, titles = [], [], []           # Figures 3 and 4: a link or plainly none
    for n in (3, 4, 5):
        at = paper_tab(n, with_tiny)
        verdicts += [m.value for m in list(at.warning) + list(at.success)]
        layers.append(at.selectbox(key=f"pf{n}_layer_{NAME}"))
        titles += [spec(c)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert len(verdicts) == 2 and any("links 'its' to 'Law'" in v and "'application'" in v for v in verdicts)
    assert all(len(s.options) == 6 and s.options[4].startswith("5 (the paper's)") for s in layers)
    assert any("only the attentions of 'its'" in t for t in titles)
    assert any("Figure 5 score of every head" in t for t in titles)
    at = paper_tab(4, with_tiny)
    heads4 = at.multiselect(key=f"pf4_heads_{NAME}_{layers[1].value}")
    assert len(heads4.value) == 2
    other = (layers[1].value + 1) % 6
    at.selectbox(key=f"pf4_layer_{NAME}").set_value(other).run()
    ok(at)
    titles = [spec(c)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(f"layer {other + 1}: full attentions" in t for t in titles)
    at.text_input(key="pf4_sentence").set_value("A sentence without the pronoun.").run()
    assert any("does not contain the word 'its'" in e.value for e in ok(at).error)


@pytest.mark.slow
def test_figure5_scores_heads_by_the_gold_arcs_they_follow(with_tiny):
    at = paper_tab(5, with_tiny)
    keys = [c.key for c in at.get("plotly_chart")]
    gold = [k for k in keys if k.startswith("pf5_gold_") and k != "pf5_gold_grid"]
    assert len(gold) == 2 and "pf5_gold_grid" in keys and "pf5_grid" in keys      # two best; the baseline stays
    text = " ".join(m.value for m in at.markdown)
    assert text.count("directed gold arcs") == 2 and "most of all" in text
    assert "layer 5" in text                                   # where the best heads sit, against the paper's
    assert any("Baseline: the neighbour score" in h.value for h in at.subheader)
    at.text_input(key="pf5_sentence").set_value("A sentence of its own.").run()
    assert any("does not fit it" in i.value for i in ok(at).info)
    assert not any(c.key.startswith("pf5_gold_") for c in at.get("plotly_chart"))
