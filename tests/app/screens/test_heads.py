"""The "What heads do" page runs on two tiny checkpoints (no real checkpoint needed) and reacts to its widgets.

Its tabs are lazy (only the open one runs): a test opens a tab by setting the tabs' key before a run."""
import base64
import gc
import json
from types import SimpleNamespace

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import core
from app import cache
from app.checkpoints import checkpoint_key
from tests.helpers import FIXTURES, tiny_model
from core.studies import analysis, compare
from core.studies import syntax as sx
from core.paths import REPO

PAGE = str(REPO / "app" / "screens" / "heads.py")
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


@pytest.fixture(autouse=True)
def ud_dev(tmp_path, monkeypatch):
    """../shared moved to a folder whose UD English EWT dev file is the tiny hand-written fixture (never the
    real data); returns that file."""
    ud = tmp_path / "shared" / "eval" / "ud-english-ewt"
    ud.mkdir(parents=True)
    dev = ud / "en_ewt-ud-dev.conllu"
    dev.write_bytes((FIXTURES / "syntax" / "mini.conllu").read_bytes())
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "shared"))
    return dev


TABS = "heads_tab"              # the key of the page's st.tabs: its value is the open tab's label


def page(name="tiny-a", tab: str | None = None) -> AppTest:
    """The page run once, on the tab `tab` (None: the default one, Head finder)."""
    at = AppTest.from_file(PAGE, default_timeout=300)          # a busy machine: scoring every head takes a while
    at.session_state["checkpoint"] = name
    at.session_state["heads_dev_n"] = 4
    if tab is not None:
        at.session_state[TABS] = tab
    return at.run()


def open_tab(at: AppTest, tab: str) -> AppTest:
    """What a click on the tab does: the page reruns with that tab open."""
    at.session_state[TABS] = tab
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


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


@pytest.mark.slow
def test_page_runs_and_the_score_selector_changes_the_heatmap(checkpoints):
    at = page()
    assert not at.exception, [e.value for e in at.exception]
    before = charts(at)["heads_grid"]
    assert "previous token" in before["layout"]["title"]["text"]
    assert np.shape(before["data"][0]["z"]) == (2, 4)                               # tiny preset: 2 layers, 4 heads
    at.selectbox(key="heads_score").set_value("eos").run()
    after = charts(at)["heads_grid"]
    assert "</s>" in after["layout"]["title"]["text"] and not np.allclose(after["data"][0]["z"], before["data"][0]["z"])
    assert "heads_entropy" in charts(open_tab(at, "Entropy")) and "heads_grid" not in charts(at)
    js = charts(open_tab(at, "Compare checkpoints"))["heads_cmp_js"]["data"][0]["z"]   # tiny-a against tiny-b: differ
    assert np.nanmax(js) > 0
    assert any("validation split" in c.value for c in open_tab(at, "Switch heads off").caption)
    pieces = np.shape(charts(open_tab(at, "Rollout"))["heads_rollout"]["data"][0]["z"])
    at.checkbox(key="heads_roll_words").check().run()
    words = np.shape(charts(at)["heads_rollout"]["data"][0]["z"])
    assert words == (len(DEFAULT_WORDS) + 1,) * 2 and words < pieces      # words + </s>
    # back on Head finder: the score picked before the other tabs were opened is still picked (persist_state)
    assert "</s>" in charts(open_tab(at, "Head finder"))["heads_grid"]["layout"]["title"]["text"]
    assert at.selectbox(key="heads_score").value == "eos"
    assert open_tab(at, "Rollout").checkbox(key="heads_roll_words").value


@pytest.mark.slow
def test_only_the_open_tab_runs(checkpoints, monkeypatch):
    """Opening the page computes the default tab (Head finder) only: no syntax grid (about 10 s on the real dev
    file), rollout, contributions, sweep sentences or comparison; opening the Syntax tab computes its grid."""
    monkeypatch.setattr(sx, "MIN_ARCS", 1)                     # four sentences: a relation needs one arc a half
    st.cache_resource.clear()                                  # the grid computed here, not found in a cache
    calls = {}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)
        return call

    for module, name in ((sx, "evaluate"), (cache, "attend"), (cache, "contributions"), (cache, "dev_slice"),
                         (cache, "comparison")):
        monkeypatch.setattr(module, name, counted(name, getattr(module, name)))
    at = page()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == {} and list(charts(at)) == ["heads_grid"]
    open_tab(at, "Syntax")
    assert calls.get("evaluate") == 1 and "heads_syn_grid" in charts(at) and "heads_grid" not in charts(at)
    assert not {"contributions", "dev_slice", "comparison"} & calls.keys()    # (its sentence's arcs: one attend)


@pytest.mark.slow
def test_sweep_draws_one_bar_per_head(checkpoints):
    at = page(tab="Switch heads off")
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


@pytest.mark.slow
def test_a_checkpoint_rewritten_in_place_is_scored_afresh(checkpoints, tokenizer):
    """The page's caches are keyed on the checkpoint's version (its weights' file and time), not on id(model):
    a model loaded after another was evicted may get the evicted one's id, and must not get its scores."""
    at = page()
    before = np.asarray(charts(at)["heads_grid"]["data"][0]["z"], dtype=float)
    folder = checkpoints / "ckpts" / "tiny-a"
    version = checkpoint_key("tiny-a")
    core.save_checkpoint(folder, tiny_model(len(tokenizer), seed=7), tokenizer)      # as training rewrites it
    assert checkpoint_key("tiny-a") != version
    st.cache_resource.clear()                     # the old model evicted from the model cache, its id free
    gc.collect()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    after = np.asarray(charts(at)["heads_grid"]["data"][0]["z"], dtype=float)
    expected = analysis.score_grid(analysis.head_scores(core.load_checkpoint(folder)), "previous", "enc_self")
    assert np.allclose(after, expected, atol=1e-4) and not np.allclose(after, before, atol=1e-3)


# ---- the maps the page draws, computed in core (core.studies.analysis) ----

def test_head_or_mean_picks_a_head_or_averages_the_layer():
    maps = np.zeros((2, 3, 2, 2))
    for layer in range(2):
        for head in range(3):
            maps[layer, head] = 10 * layer + head
    assert np.all(analysis.head_or_mean(maps, 1, 2) == 12)
    assert np.allclose(analysis.head_or_mean(maps, 1), 11)          # (10 + 11 + 12) / 3


def test_rollout_maps_follow_the_residual_through_the_layers_and_merge_words():
    pieces = ["\u2581un", "believ", "able", "\u2581yes", "</s>"]
    S = len(pieces)
    uniform = SimpleNamespace(src_tokens=pieces, enc_self=np.full((2, 4, S, S), 1 / S, dtype=np.float32))
    (roll, raw), labels = analysis.rollout_maps(uniform, layer=1)
    # each layer is 0.5 U + 0.5 I (U: uniform); two of them: 0.25 U + 0.5 U + 0.25 I, as U U = U
    assert labels == pieces and np.allclose(raw, 1 / S)
    assert np.allclose(roll, 0.75 / S + 0.25 * np.eye(S))
    identity = SimpleNamespace(src_tokens=pieces, enc_self=np.broadcast_to(np.eye(S), (2, 4, S, S)))
    (roll, raw), labels = analysis.rollout_maps(identity, layer=0, head=3, words=True)
    assert labels == ["unbelievable", "yes", "</s>"]
    assert np.allclose(roll, np.eye(3)) and np.allclose(raw, np.eye(3))     # a word attending to its own pieces


def test_compared_maps_pick_the_same_head_of_both_models():
    A, B = np.zeros((1, 2, 3, 3)), np.ones((1, 2, 3, 3))
    A[0, 1] = 0.5
    rows = ["\u2581a", "b", "</s>"]
    cmp = compare.Comparison(None, None, maps={"enc_self": (A, B)}, labels={"enc_self": (rows, rows)},
                             level={"enc_self": "pieces"})
    (a, b), r, c = analysis.compared_maps(cmp, "enc_self", 0)
    assert np.allclose(a, 0.25) and np.allclose(b, 1) and r == c == rows        # mean of heads 0 and 1
    (a, b), r, c = analysis.compared_maps(cmp, "enc_self", 0, head=1, words=True)
    assert r == c == ["ab", "</s>"]
    assert np.allclose(a, [[1.0, 0.5], [1.0, 0.5]]) and np.allclose(b, [[2, 1], [2, 1]])   # columns summed


def syntax_texts(at) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info", "warning") for e in at.get(kind))


@pytest.mark.slow
def test_syntax_tab_grids_heads_by_relation_and_draws_a_sentence_beside_its_gold_arcs(checkpoints, monkeypatch):
    monkeypatch.setattr(sx, "MIN_ARCS", 1)                     # four sentences: a relation needs one arc a half
    at = page(tab="Syntax")
    assert not at.exception, [e.value for e in at.exception]
    specs = charts(at)
    grid = specs["heads_syn_grid"]["data"][0]
    cfg = core.load_checkpoint(checkpoints / "ckpts" / "tiny-a").cfg
    assert len(grid["y"]) == cfg.N * cfg.h and "nsubj dep-&gt;head" in grid["x"]
    assert "heads_syn_arcs" in specs
    text = syntax_texts(at)
    assert "UD English EWT dev" in text and "no automatic parser" in text
    # another relation and sentence: the arcs figure follows
    at.selectbox(key="heads_syn_rel").set_value(("punct", "head->dep")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "punct head-&gt;dep" in charts(at)["heads_syn_arcs"]["layout"]["title"]["text"]


@pytest.mark.slow
def test_syntax_tab_says_when_too_few_arcs_and_when_the_dev_file_is_missing(checkpoints, ud_dev):
    at = page(tab="Syntax")                                    # MIN_ARCS 20: four sentences give no grid
    assert not at.exception, [e.value for e in at.exception]
    assert "heads_syn_grid" not in charts(at) and "heads_syn_arcs" in charts(at)
    assert "no relation has 20 arcs in each half" in syntax_texts(at)
    ud_dev.unlink()
    st.cache_resource.clear()
    at = page(tab="Syntax")
    assert not at.exception, [e.value for e in at.exception]
    text = syntax_texts(at)
    assert "cannot be read" in text and "Figure 5 sentence" in text
    assert "`python scripts/get_data.py eval` (3.8 MB)" in text and str(ud_dev.parent) not in text
    assert "heads_syn_grid" not in charts(at)
    assert "longer than the model takes" in text        # the tiny model's max_len is shorter than the paper's sentence
