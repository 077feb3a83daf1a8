"""Positional encoding's rotary section, Queries and keys, and Attention, step by step's real head on language models
(tiny random GPT-2, Llama with grouped-query attention, Qwen2 with one key head and base 10^6, BERT, all converted
from transformers): the drawn numbers are core's and the model's own."""
import base64
import json

import numpy as np
import pytest

from core import load_checkpoint
from core.studies.rotary import RopeSettings, example_vectors, pair_angles, position_scores

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from tests.helpers import run_page as run  # noqa: E402  one page on one checkpoint, by AppTest


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from core.checkpoint.pretrained import convert_folder
    from tests.core.checkpoint.pretrained.encoder_models import build_encoder
    from tests.core.checkpoint.pretrained.hf_lm_models import build_gpt2, build_llama
    root = tmp_path_factory.mktemp("lm_qk")
    out = root / "checkpoints"
    convert_folder(build_gpt2(root / "hf-gpt2"), out / "gpt2-tiny")
    convert_folder(build_llama(root / "hf-llama", "llama-gqa"), out / "llama-gqa")
    convert_folder(build_llama(root / "hf-qwen", "qwen2"), out / "qwen2-tiny")
    convert_folder(build_encoder(root / "hf-bert", "bert"), out / "bert-tiny")
    return out


def chart(at, key: str) -> dict:
    """The Plotly spec of the chart with this key."""
    (fig,) = [c for c in at.get("plotly_chart") if c.proto.id.endswith(key) or key in c.proto.id]
    return json.loads(fig.proto.spec)


def array_of(v) -> np.ndarray:
    """A Plotly array, sent as a typed array or as a list, as a flat numpy array."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"])
    return np.asarray(v)


def z_of(spec: dict, trace: int = 0) -> np.ndarray:
    """A trace's z as numpy (Plotly sends it as a typed array, or as a list where it holds gaps)."""
    z = spec["data"][trace]["z"]
    if isinstance(z, dict):
        shape = [int(n) for n in z["shape"].split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape(shape).astype(np.float64)
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=np.float64)


@pytest.mark.slow
@pytest.mark.parametrize("name, rope", [("gpt2-tiny", RopeSettings(10000.0, 64)),
                                        ("qwen2-tiny", RopeSettings(1e6, 8))])
def test_the_rotary_figures_are_cores_numbers_with_the_models_base(folder, monkeypatch, name, rope):
    at = run("positional_encoding", name, folder, monkeypatch, rope_vectors="random", rope_seed=4)
    n_pos = at.slider(key="rope_positions").value
    assert np.allclose(z_of(chart(at, "rope_angles")), pair_angles(n_pos, rope))
    q, k = example_vectors(rope.d_k, "random", 4)
    drawn = z_of(chart(at, "rope_scores"))
    assert np.allclose(drawn, position_scores(q, k, n_pos, rope), atol=1e-6)
    assert np.allclose(np.diagonal(drawn, -3), np.diagonal(drawn, -3)[0], atol=1e-3 * np.abs(drawn).max())
    said = [i.value for i in at.info if "rotary positions" in i.value]
    assert bool(said) == (name == "qwen2-tiny")
    if said:
        assert "base 1e\\+06" in said[0] or "base 1e+06" in said[0]
        assert not [s for s in at.select_slider if s.key == "rope_base"]       # the model's, not a slider's
    else:
        assert at.select_slider(key="rope_base").value == 10000.0


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Each row's softmax, NaN cells (masked) weight 0."""
    e = np.exp(np.nan_to_num(scores - np.nanmax(scores, -1, keepdims=True), nan=-np.inf))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-gqa", "qwen2-tiny", "bert-tiny"])
def test_the_drawn_scores_softmaxed_are_the_models_own_map(folder, monkeypatch, name):
    text = "the cat sat on the mat and the cat"
    at = run("qk", name, folder, monkeypatch, qk_lm_text=text, qk_lm_layer=1, qk_lm_head=2)
    model = load_checkpoint(folder / name)
    own = model.attend(text).self_attn[1, 2]
    scores = z_of(chart(at, "qk_lm_scores"))
    causal = model.cfg.family == "decoder-only"
    assert np.isnan(np.triu(scores, 1)[np.triu_indices(len(own), 1)]).all() == causal
    assert np.allclose(softmax_rows(scores), own, atol=1e-5)
    assert np.allclose(z_of(chart(at, "qk_lm_map")), own, atol=1e-6)
    if causal:
        assert np.allclose(np.triu(own, 1), 0)                                # nothing right of the diagonal
    scatter = chart(at, "qk_lm_chart")
    assert sum(len(array_of(t["x"])) for t in scatter["data"]) == 2 * len(own)          # every query and key
    shared = [c.value for c in at.caption if "Grouped-query" in c.value]
    assert bool(shared) == (name in ("llama-gqa", "qwen2-tiny"))
    if name == "llama-gqa":                                                   # 4 query heads over 2 key heads
        assert "query head 3 reads key/value head 2 of 2, shared with query head 4" in shared[0]
    assert not at.info                                                        # no "needs a translation model"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-gqa", "bert-tiny"])
def test_the_real_head_walk_on_a_language_model_is_the_heads_map_row(folder, monkeypatch, name):
    text = "the cat sat on the mat"
    at = run("scaled_attention", name, folder, monkeypatch, sdpa_lm_text=text, sdpa_lm_layer=1, sdpa_lm_head=3,
             sdpa_real_row_self=4)
    model = load_checkpoint(folder / name)
    row = model.attend(text).self_attn[1, 3, 4]
    (weights,) = [d.value for d in at.dataframe if "softmax weight" in d.value]
    shown = weights["softmax weight"].to_numpy(float)                   # the keys it may look at, in order
    causal = model.cfg.family == "decoder-only"
    assert len(shown) == (5 if causal else len(row))
    assert np.allclose(shown, row[: len(shown)], atol=1e-5) and np.allclose(row[len(shown):], 0)
    drawn = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "sdpa_real_weights" in c.proto.id]
    assert drawn and not [i.value for i in at.info if "needs a translation" in i.value]
    gap = [c.value for c in at.caption if "differs from the model's own map" in c.value]
    assert gap and "at most" in gap[0]
    assert bool([c.value for c in at.caption if "Grouped-query" in c.value]) == (name == "llama-gqa")
