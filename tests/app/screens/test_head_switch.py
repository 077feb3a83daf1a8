"""A head switch on the explorer page swaps one map into a cached, styled figure frame instead of building a
figure: the result must be exactly the figure a fresh build gives."""
import base64
import json

import numpy as np
import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

import app.figures.attention as attention
from app import cache
from app.checkpoints import untrained_model
from app.figures.style import readable
from core.paths import REPO

MAIN = str(REPO / "app" / "main.py")
ROWS = ["<s>", "▁Ein", "▁Mann", "<0x39>", "▁&", "</s>"]
COLS = ["▁A", "▁man", "▁<b>", "▁on", "▁9", ".", "</s>"]


def spec(fig) -> dict:
    return json.loads(plotly.io.to_json(fig, validate=False))


@pytest.mark.parametrize("zmax", [1.0, None])
@pytest.mark.parametrize("presenter", [False, True])
def test_a_head_from_the_frame_equals_a_fresh_build(zmax, presenter):
    rng = np.random.default_rng(0)
    head_a, head_b = (rng.dirichlet(np.ones(len(COLS)), size=len(ROWS)).astype(np.float32) for _ in range(2))
    def build(attn, title):
        return readable(attention.heatmap_figure(attn, ROWS, COLS, title=title, zmax=zmax,
                                                                      row_title="rows", col_title="cols"), presenter)
    frame = build(head_a, "layer 1, head 1").to_dict()
    before = json.dumps(frame, default=lambda a: a.tolist(), sort_keys=True)

    fig = attention.heatmap_from_frame(frame, head_b, "layer 2, head <3>", zmax)
    assert spec(fig) == spec(build(head_b, "layer 2, head <3>"))
    assert np.array_equal(fig.data[0].z, head_b) and fig.layout.title.text == "layer 2, head &lt;3&gt;"
    assert fig.data[0].zmax == (1.0 if zmax else pytest.approx(float(head_b.max())))
    assert json.dumps(frame, default=lambda a: a.tolist(), sort_keys=True) == before      # the shared frame is intact


@pytest.mark.slow
def test_switching_heads_on_the_page_builds_no_figure(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))          # the untrained model, no checkpoints
    src, tgt = "A man is on a ladder.", "Ein Mann ist auf einer Leiter."
    at = AppTest.from_file(MAIN, default_timeout=300)
    at.session_state["src"], at.session_state["tgt"] = src, tgt
    at.session_state["words"] = False                # the model's own pieces: the maps compare with enc_self as is
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    builds = []
    real = attention.heatmap_figure                  # the frames of app.cache.heatmap_frame are built by it
    monkeypatch.setattr(cache, "heatmap_figure", lambda *a, **k: builds.append(1) or real(*a, **k))

    expected = untrained_model().attend(src, tgt=tgt).enc_self                                  # computed apart
    for layer, head in [(0, 3), (2, 5), (5, 0)]:
        at.selectbox(key="layer").set_value(layer)
        at.selectbox(key="head").set_value(head).run()
        assert not at.exception, [e.value for e in at.exception]
        (chart,) = at.get("plotly_chart")
        fig = json.loads(chart.proto.spec)
        assert fig["layout"]["title"]["text"].endswith(f"layer {layer + 1} of 6, head {head + 1} of 8")
        z = fig["data"][0]["z"]
        z = np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]) if isinstance(z, dict) else z    # typed array
        np.testing.assert_allclose(np.asarray(z, np.float32).reshape(expected.shape[2:]), expected[layer, head])
    assert builds == []                              # every switch reused the frame

    at.toggle(key="stretch").set_value(True).run()   # another colour mode is another frame: built once
    assert builds == [1] and not at.exception
