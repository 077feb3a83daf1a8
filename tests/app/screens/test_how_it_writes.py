"""The "How it writes" page, run headless with AppTest on a tiny checkpoint: stepping reads the cached trace (no model
call), a link opens a step, a forced word is decoded beside the model's own, bad input gets a message."""
import pytest
from streamlit.testing.v1 import AppTest

import core
import core.decoding_trace
from core.paths import REPO
from tests.helpers import stopping_checkpoint_root

PAGE = REPO / "app" / "screens" / "how_it_writes.py"
NAME = "tiny-writes"
TIMEOUT = 180                       # the machine's cores are shared


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory, tokenizer):
    """checkpoints/tiny-writes: a random tiny model whose translations end after a few pieces."""
    return stopping_checkpoint_root(tmp_path_factory, tokenizer, NAME, eos_bias=2.0)


@pytest.fixture
def searches(tiny_root, monkeypatch):
    """The page on the tiny checkpoint; counts the model's traced searches."""
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_root))
    calls = []
    real = core.decoding_trace.traced_search

    def counted(*args, **kwargs):
        calls.append(args[4] if len(args) > 4 else kwargs.get("forced"))
        return real(*args, **kwargs)
    monkeypatch.setattr(core.decoding_trace, "traced_search", counted)
    return calls


def page(text: str | None = "the quick brown fox jumps", step: int | None = None) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT)
    at.session_state["checkpoint"] = NAME
    if text is not None:
        at.query_params["text"] = text
    if step is not None:
        at.query_params["step"] = str(step)
    return at.run()


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_stepping_reads_the_cached_trace(searches):
    at = ok(page(text="the lazy dog sleeps on the mat"))
    first = len(searches)
    assert first >= 1 and "Translation" in at.markdown[0].value
    n = at.slider(key="hw_step").max
    assert n >= 2
    ok(at.button(key="hw_next").click().run())
    assert at.session_state["hw_step"] == 2 and at.query_params["step"] == "2"
    ok(at.slider(key="hw_step").set_value(n).run())
    ok(at.slider(key="hw_temperature").set_value(2.0).run())
    ok(at.selectbox(key="hw_head").set_value(0).run())
    assert len(searches) == first                       # no model call for a step, a temperature or a head
    assert len(at.get("plotly_chart")) == 3


@pytest.mark.slow
def test_a_link_opens_its_step(searches):
    at = ok(page(text="two young girls are playing", step=2))
    assert at.session_state["hw_step"] == 2
    assert at.session_state["src"] == "two young girls are playing"


@pytest.mark.slow
def test_a_link_holds_the_search_and_the_map_and_a_wrong_value_is_said(searches):
    at = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT)
    at.session_state["checkpoint"] = NAME
    at.query_params.update(text="two young girls are playing", beam="2", alpha="0.3", layer="1", head="mean")
    ok(at.run())
    assert (at.selectbox(key="hw_beam").value, at.slider(key="hw_alpha").value) == (2, 0.3)
    assert (at.selectbox(key="hw_layer").value, at.selectbox(key="hw_head").value) == (0, -1)
    ok(at.slider(key="hw_alpha").set_value(0.8).run())
    ok(at.selectbox(key="hw_head").set_value(1).run())
    assert {k: at.query_params[k] for k in ("beam", "alpha", "layer", "head")} == \
        {"beam": "2", "alpha": "0.8", "layer": "1", "head": "2"}
    wrong = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT)
    wrong.session_state["checkpoint"] = NAME
    wrong.query_params.update(beam="3", head="99")
    ok(wrong.run())
    assert wrong.selectbox(key="hw_beam").value == 4 and wrong.selectbox(key="hw_head").value == -1
    assert any("'3' is not a beam size" in t.value for t in wrong.toast)


@pytest.mark.slow
def test_forcing_a_word_decodes_from_it(searches, tokenizer):
    at = ok(page(text="the quick brown fox"))
    at.text_input(key="hw_typed").set_value("Fuchs")
    ok(at.button(key="hw_force").click().run())
    assert any("With your word" in m.value for m in at.markdown)
    fuchs = tokenizer.encode("Fuchs", "tgt")
    assert [f for f in searches if f and list(f[-len(fuchs):]) == fuchs]     # the word's pieces were forced
    ok(at.button(key="hw_unforce").click().run())
    assert not any("With your word" in m.value for m in at.markdown)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "?!… ---", "这是一个句子。", "the fox " * 700])
def test_odd_input_never_crashes(searches, text):
    at = ok(page(text=None))
    at.text_area(key="src").set_value(text)
    ok(at.run())
    if not text.strip():
        assert at.warning and "empty" in at.warning[0].value


@pytest.mark.slow
def test_sampling_beside_the_searches_repeats_with_its_seed(searches):
    at = ok(page(text="the quick brown fox"))
    ok(at.toggle(key="hw_sampling").set_value(True).run())
    line = next(m.value for m in at.markdown if "sampled" in m.value)
    ok(at.number_input(key="hw_s_temperature").set_value(1.5).run())
    again = next(m.value for m in at.markdown if "sampled" in m.value)
    assert "T = 1.5" in again and "T = 1," in line
