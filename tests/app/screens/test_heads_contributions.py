"""'What heads do' > Beyond attention: the three views of one sentence, each translated word's source share, and
the saved faithfulness table (or how to make one), on tiny checkpoints; the tab opened by page(tab=TAB)."""
import pytest
import json

import numpy as np

from core.studies import faithfulness as fa
from tests.app.screens.test_heads import charts, checkpoints, page  # noqa: F401 (checkpoints: a fixture)

TABLE = [{"method": m, "what": w, "words": 10, "mean_drop": d, "stderr": 0.1, "median_drop": d, "flipped": 0.2}
         for (m, w), d in zip(fa.METHODS.items(), (2.0, 2.5, 3.0, 0.4))]
TAB = "Beyond attention"


@pytest.mark.slow
def test_the_three_views_and_the_shares(checkpoints):  # noqa: F811
    at = page(tab=TAB)
    assert not at.exception, [e.value for e in at.exception]
    one = charts(at)["heads_ctb_maps"]
    assert len(one["data"]) == 1                            # attention weights alone: one map
    assert any("softmax weights" in c.value for c in at.caption)
    at.segmented_control(key="heads_ctb_show").set_value("norm").run()
    assert not at.exception, [e.value for e in at.exception]
    two = charts(at)["heads_ctb_maps"]
    raw, norm = (np.asarray(d["z"], dtype=float) for d in two["data"][:2])
    assert raw.shape == norm.shape and not np.allclose(raw, norm)
    assert any("Kobayashi" in c.value for c in at.caption)
    at.segmented_control(key="heads_ctb_show").set_value("alti").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "whole layer" in json.dumps(charts(at)["heads_ctb_maps"]["layout"])
    assert at.selectbox(key="heads_ctb_head").disabled
    at.selectbox(key="heads_ctb_kind").set_value("cross").run()
    assert not at.exception, [e.value for e in at.exception]
    if "heads_ctb_share" in charts(at):                     # a random model may translate into nothing
        share = charts(at)["heads_ctb_share"]["data"]
        total = np.asarray(share[0]["y"], dtype=float) + np.asarray(share[1]["y"], dtype=float)
        np.testing.assert_allclose(total, 1.0, atol=1e-6)
    assert any("evaluate_faithfulness.py" in i.value for i in at.info)


@pytest.mark.slow
def test_the_saved_faithfulness_table_is_shown(checkpoints):  # noqa: F811
    folder = checkpoints / "ckpts" / "tiny-a"
    (folder / fa.RESULT_FILE).write_text(json.dumps({"sentences": 7, "table": TABLE, "most_faithful": "alti"}))
    at = page(tab=TAB)
    assert not at.exception, [e.value for e in at.exception]
    bars = charts(at)["heads_faith_chart"]["data"][0]
    assert list(bars["x"]) == list(fa.METHODS)
    assert any("mean drop (nats)" in df.value.columns for df in at.dataframe)
    assert any("Most faithful here: **alti**" in c.value for c in at.caption)
    (folder / fa.RESULT_FILE).write_text("{not json")
    at = page(tab=TAB)
    assert not at.exception and any("cannot be read" in w.value for w in at.warning)


@pytest.mark.slow
def test_the_explorer_shows_each_view(checkpoints):  # noqa: F811
    """The explorer's "Show:" swaps the map for the norm-based or ALTI+ one, same rows and columns, and explains it."""
    from streamlit.testing.v1 import AppTest
    from core.paths import REPO
    at = AppTest.from_file(str(REPO / "app" / "screens" / "explorer.py"), default_timeout=300)
    at.session_state["checkpoint"] = "tiny-a"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    raw = np.asarray(charts(at)["one_chart"]["data"][0]["z"], dtype=float)
    for weights, words in (("norm", "Kobayashi"), ("alti", "Ferrando")):
        at.segmented_control(key="show").set_value(weights).run()
        assert not at.exception, [e.value for e in at.exception]
        z = np.asarray(charts(at)["one_chart"]["data"][0]["z"], dtype=float)
        assert z.shape == raw.shape and not np.allclose(z, raw)
        assert any(words in c.value for c in at.caption)
