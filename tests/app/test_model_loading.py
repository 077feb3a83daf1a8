"""app.cache.load_model in the app: a checkpoint loads with a progress bar that is emptied afterwards and not
replayed from the cache on later reruns, and a model too big for the memory left gets memory_problem's message in
the sidebar and on the page, without a crash."""
import pytest
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

import core
from app import checkpoints as ck
from core.paths import REPO
from tests.helpers import tiny_model

MAIN = str(REPO / "app" / "main.py")


@pytest.fixture
def tiny(tmp_path, tokenizer, monkeypatch):
    """A checkpoints folder holding only checkpoints/tiny, a tiny random model; its models not in the cache yet."""
    folder = core.save_checkpoint(tmp_path / "tiny", tiny_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    st.cache_resource.clear()
    return folder


@pytest.fixture
def bars(monkeypatch):
    """(fraction, text) of every progress bar made (st.progress) or moved on (bar.progress) from now on."""
    seen = []
    made, moved = st.progress, DeltaGenerator.progress
    monkeypatch.setattr(st, "progress", lambda value, text=None, **kw: seen.append((value, text)) or
                        made(value, text=text, **kw))
    monkeypatch.setattr(DeltaGenerator, "progress", lambda self, value, text=None, **kw: seen.append((value, text))
                        or moved(self, value, text=text, **kw))
    return seen


def run_main() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.session_state["checkpoint"] = "tiny"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def leftovers(at: AppTest) -> list[str]:
    """The sidebar's elements that show nothing: an emptied bar's place (AppTest knows no 'empty' element)."""
    return [type(e).__name__ for e in at.sidebar if type(e).__name__ == "UnknownElement"]


@pytest.mark.slow
def test_a_checkpoint_loads_with_a_progress_bar_that_is_not_replayed(tiny, bars):
    at = run_main()
    assert any(c.value.startswith("N=2 encoder") for c in at.sidebar.caption)      # the model is there
    texts = [text for _, text in bars]
    assert texts[0].startswith("Loading 'tiny': Reading the weights") and texts[-1] == "Loading 'tiny': Loaded."
    assert [f for f, _ in bars] == sorted(f for f, _ in bars)
    assert not at.get("progress") and leftovers(at) == ["UnknownElement"]        # emptied once loaded
    bars.clear()
    at.run()                                          # the model comes from the cache: no bar, none replayed
    assert not at.exception and bars == [] and leftovers(at) == []


@pytest.mark.slow
def test_a_model_too_big_for_the_memory_left_gets_a_message(tiny, bars, monkeypatch):
    monkeypatch.setattr(ck, "memory_available", lambda: 1024)
    at = run_main()
    sidebar = [e.value for e in at.sidebar.error]
    assert len(sidebar) == 1 and "it does not fit" in sidebar[0] and "Pick another one above" in sidebar[0]
    page = [e.value for e in at.main.error]
    assert len(page) == 1 and page[0].startswith("The checkpoint 'tiny' cannot be loaded: This model needs about")
    assert page[0].endswith("lists the sizes). Pick another in the sidebar.")
    assert bars == []                                 # refused before its weights are read
    monkeypatch.setattr(ck, "memory_available", lambda: None)     # memory freed: a rerun loads it
    at.run()
    assert not at.exception and not at.error and any(t.startswith("Loading 'tiny'") for _, t in bars)
