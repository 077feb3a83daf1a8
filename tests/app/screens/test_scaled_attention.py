"""The second half of 'Attention, step by step': one query of a real head, with the model's own numbers (AppTest, on
the untrained fallback model: the page must not care whether the weights are trained)."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO

PAGE = str(REPO / "app" / "screens" / "scaled_attention.py")


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))            # the untrained model only
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["sdpa_real_src"] = "The cat sat."
    return at.run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def gap(at: AppTest) -> float:
    """The largest difference the page reports between its softmax row and the model's own map."""
    text = next(c.value for c in at.caption if "model's own map" in c.value).replace("\\", "")
    return float(re.search(r"at most ([0-9.e+-]+)\.", text).group(1))


@pytest.mark.slow
def test_the_real_head_walk_uses_the_models_numbers(page):
    at = ok(page)
    subheaders = [h.value for h in at.subheader]
    assert subheaders[:2] == ["1. The query", "2. The keys, and a dot product with each"]
    assert subheaders[2].startswith("3. Divide by √d_k = √32 = 5.66")
    assert gap(at) < 1e-5
    keys, values = at.dataframe[3].value, at.dataframe[4].value
    assert [k.rsplit(" ", 1)[1] for k in keys.key] == [f"({i})" for i in range(1, len(keys) + 1)]
    assert keys["softmax weight"].sum() == pytest.approx(1.0)
    assert values.key.iloc[-1] == "= output (sum)"
    at.segmented_control(key="sdpa_real_kind").set_value("dec_self").run()
    ok(at)
    assert "masked" in " ".join(m.value for m in at.markdown) and gap(at) < 1e-5
    at.segmented_control(key="sdpa_real_kind").set_value("cross").run()
    at.selectbox(key="sdpa_real_head").set_value(5).run()
    assert gap(ok(at)) < 1e-5 and "head 6" in " ".join(m.value for m in at.markdown).replace("\\", "")


def test_an_empty_sentence_is_a_message(page):
    page.text_input(key="sdpa_real_src").set_value("  ").run()
    assert any("empty" in w.value for w in ok(page).warning)
