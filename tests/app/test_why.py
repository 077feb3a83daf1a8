"""app.why's "Why this and not that?" section, run headless with AppTest on How it writes with a tiny checkpoint:
each method draws its strips beside the step's attention, the model's own piece against itself is refused with a
hint, and the page says how to measure which explanation to trust until the checkpoint has its
contrast_faithfulness.json (then it shows what was measured)."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from core.attribution import METHODS
from core.paths import REPO
from core.studies.contrast_faithfulness import RESULT_FILE
from tests.helpers import stopping_checkpoint_root

PAGE = REPO / "app" / "screens" / "how_it_writes.py"
NAME = "tiny-why"


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory, tokenizer):
    return stopping_checkpoint_root(tmp_path_factory, tokenizer, NAME, eos_bias=2.0)


def page(tiny_root, monkeypatch) -> AppTest:
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_root))
    at = AppTest.from_file(str(PAGE), default_timeout=180)
    at.session_state["checkpoint"] = NAME
    at.query_params["text"] = "the quick brown fox jumps"
    return at.run()


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def figures(at) -> list:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


@pytest.mark.slow
def test_each_method_draws_why_beside_the_attention(tiny_root, monkeypatch):
    at = ok(page(tiny_root, monkeypatch))
    before = len(at.get("plotly_chart"))
    ok(at.toggle(key="hw_why").set_value(True).run())
    assert len(at.get("plotly_chart")) == before + 1
    for method in METHODS:
        ok(at.radio(key="hw_why_method").set_value(method).run())
        spec = figures(at)[-1]
        assert spec["layout"]["title"]["text"].startswith("Why '")
        strips = [t for t in spec["data"] if t["type"] == "heatmap"]
        assert len(strips) == 2 and len(strips[0]["x"]) == 5            # the five source words, twice
    captions = " ".join(c.value for c in at.caption)
    assert "Attention looks most at" in captions and "scripts/evaluate_contrast.py" in captions


@pytest.mark.slow
def test_the_models_own_piece_against_itself_is_refused(tiny_root, monkeypatch):
    at = ok(page(tiny_root, monkeypatch))
    at.selectbox(key="hw_pick_0").set_value(0)
    ok(at.toggle(key="hw_why").set_value(True).run())
    assert any("other than the piece the model wrote" in i.value for i in at.info)


@pytest.mark.slow
def test_the_measured_verdict_is_shown(tiny_root, monkeypatch):
    result = {"cases": 4, "table": [{"ranker": "erasure", "top": 1, "flipped": 0.5, "mean_fall": 1.0},
                                    {"ranker": "attention", "top": 1, "flipped": 0.25, "mean_fall": 0.5}]}
    (tiny_root / NAME / RESULT_FILE).write_text(json.dumps(result))
    try:
        at = ok(page(tiny_root, monkeypatch))
        ok(at.toggle(key="hw_why").set_value(True).run())
        captions = " ".join(c.value for c in at.caption)
        assert "4 pronoun choices" in captions and "erasure \\(the ceiling\\) 50%" in captions
        assert "attention \\(mean\\) 25%" in captions
    finally:
        (tiny_root / NAME / RESULT_FILE).unlink()
