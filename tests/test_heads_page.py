"""The "What heads do" page runs on two tiny checkpoints (no real checkpoint needed) and reacts to its widgets."""
from pathlib import Path

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core
from conftest import tiny_model

PAGE = str(Path(__file__).resolve().parents[1] / "app" / "views" / "heads.py")
DEFAULT_WORDS = "The Commission presented its report yesterday, but the Council rejected it.".split()
VALID = [("a man in a blue shirt", "ein Mann in einem blauen Hemd"), ("two young girls", "zwei junge Mädchen"),
         ("the weather is nice", "das Wetter ist schön"), ("the lazy dog", "der faule Hund")]


@pytest.fixture
def checkpoints(tmp_path, tokenizer, monkeypatch):
    """Two tiny random checkpoints; the first names a data folder with a 4-line validation split."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "valid.en").write_text("".join(s + "\n" for s, _ in VALID), encoding="utf-8")
    (data / "valid.de").write_text("".join(t + "\n" for _, t in VALID), encoding="utf-8")
    for seed, name in enumerate(["tiny-a", "tiny-b"]):
        core.save_checkpoint(tmp_path / "ckpts" / name, tiny_model(len(tokenizer), seed=seed), tokenizer,
                             {"name": name, "trained_here": True, "data": {"folder": str(data)}})
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "ckpts"))
    return tmp_path


def page(name="tiny-a") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["checkpoint"] = name
    at.session_state["heads_dev_n"] = 4
    return at.run()


def _arrays(obj):
    """Plotly 6 stores arrays as {"bdata": base64, "dtype", "shape"}: turn them back into numpy."""
    if isinstance(obj, dict) and "bdata" in obj:
        a = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=obj["dtype"])
        return a.reshape([int(n) for n in str(obj.get("shape", len(a))).split(",")])
    if isinstance(obj, dict):
        return {k: _arrays(v) for k, v in obj.items()}
    return [_arrays(v) for v in obj] if isinstance(obj, list) else obj


def charts(at) -> dict:
    """key -> Plotly figure spec (a dict, arrays as numpy) of every chart on the page."""
    return {el.key: _arrays(json.loads(el.proto.spec)) for el in at.get("plotly_chart")}


def test_page_runs_and_the_score_selector_changes_the_heatmap(checkpoints):
    at = page()
    assert not at.exception, [e.value for e in at.exception]
    before = charts(at)["heads_grid"]
    assert "previous token" in before["layout"]["title"]["text"]
    assert np.shape(before["data"][0]["z"]) == (2, 4)                               # tiny preset: 2 layers, 4 heads
    at.selectbox(key="heads_score").set_value("eos").run()
    after = charts(at)["heads_grid"]
    assert "</s>" in after["layout"]["title"]["text"] and not np.allclose(after["data"][0]["z"], before["data"][0]["z"])
    assert "heads_rollout" in charts(at) and "heads_entropy" in charts(at)
    js = charts(at)["heads_cmp_js"]["data"][0]["z"]                                 # tiny-a against tiny-b: they differ
    assert np.nanmax(js) > 0
    assert any("validation split" in c.value for c in at.caption)
    pieces = np.shape(charts(at)["heads_rollout"]["data"][0]["z"])
    at.checkbox(key="heads_roll_words").check().run()
    words = np.shape(charts(at)["heads_rollout"]["data"][0]["z"])
    assert words == (len(DEFAULT_WORDS) + 1,) * 2 and words < pieces      # words + </s>


def test_sweep_draws_one_bar_per_head(checkpoints):
    at = page()
    assert "heads_sweep_chart" not in charts(at)
    at.button(key="heads_sweep_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    bars = charts(at)["heads_sweep_chart"]["data"][0]
    assert list(bars["x"]) == ["head 1", "head 2", "head 3", "head 4"]
    at.multiselect(key="heads_off").set_value([("enc_self", 0, 0), ("enc_self", 0, 1)]).run()
    at.button(key="heads_measure").click().run()
    assert not at.exception and at.metric[0].label == "BLEU without these heads"


def test_head_finder_colours_fit_the_scores_and_its_columns_are_explained(checkpoints):
    at = page()
    grid = charts(at)["heads_grid"]["data"][0]
    assert grid.get("zmin") == 0 and grid.get("zmax") is None      # 0 to the largest score, not a fixed 1
    top = float(np.nanmax(np.asarray(grid["z"], dtype=float)))
    assert any(f"largest value here, {top:.2f}" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert "previous token" in table.columns and "entropy_norm" not in table.columns and "eos" not in table.columns
    explained = " ".join(e.value for e in at.markdown)
    assert "end token \\</s\\>" in explained and "spread evenly over every token" in explained   # escaped Markdown
