"""app/cache.py: one key convention (a CheckpointKey first), the checkpoint's version looked up once per rerun,
one cache entry per choice however a page passes it, and shared results computed once."""
import inspect
import os

import numpy as np
import pytest
from streamlit.runtime.caching.cache_utils import CachedFunc
from streamlit.testing.v1 import AppTest

import core
from app import cache
from app.checkpoints import UNTRAINED, CheckpointKey, checkpoint_key
from core.paths import REPO
from core.studies import qk
from tests.helpers import tiny_model

MAIN = str(REPO / "app" / "main.py")
NO_CHECKPOINT = {"heatmap_frame", "pronoun_set", "gold_pairs", "_ud_sentences", "collapse_table",   # labels, data
                 "toy_runs", "toy_figures", "copy_runs", "copy_figures"}      # Watch it learn trains models of its own


@pytest.fixture
def tiny(tmp_path, tokenizer, monkeypatch):
    """The key of checkpoints/tiny, a tiny random model, in a temporary checkpoints folder."""
    core.save_checkpoint(tmp_path / "tiny", tiny_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    return checkpoint_key("tiny")


def show_current_checkpoint():
    import streamlit as st

    from app import cache
    st.write(repr(cache.current_checkpoint()))


def test_every_cache_is_keyed_on_a_checkpoint_first_or_on_no_checkpoint_at_all():
    found = {name: f for name, f in vars(cache).items() if isinstance(f, CachedFunc)}
    assert len(found) >= 20 and NO_CHECKPOINT <= set(found)
    for name, f in found.items():
        params = list(inspect.signature(f).parameters.values())
        keys = [p.name for p in params if p.annotation == "CheckpointKey"]
        if name in NO_CHECKPOINT:
            assert not keys, name
        else:
            assert params[0].annotation == "CheckpointKey", name                 # the key first
            assert keys == [params[0].name] or name == "comparison", name        # (two checkpoints to compare)


def test_the_key_changes_when_the_weights_are_rewritten(tiny):
    assert isinstance(tiny, CheckpointKey) and tiny.name == "tiny" and "model.safetensors@" in tiny.version
    assert checkpoint_key("tiny") == tiny                                        # nothing changed: the same key
    os.utime(tiny.version.split("@")[0], ns=(1, 1))                              # as training rewrites it
    assert checkpoint_key("tiny") != tiny
    assert checkpoint_key(UNTRAINED) == (UNTRAINED, UNTRAINED)
    assert checkpoint_key("missing").version.endswith("model.safetensors")


def test_the_version_is_looked_up_once_per_rerun_and_forgotten_after_it(tiny, monkeypatch):
    calls = []
    real = cache.checkpoint_key
    monkeypatch.setattr(cache, "checkpoint_key", lambda name: calls.append(name) or real(name))
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.session_state["src"], at.session_state["tgt"] = "the lazy dog", "der faule Hund"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls == ["tiny"]                          # the sidebar pinned it; the page read the pin
    assert cache.PINNED not in at.session_state       # the next rerun looks at the files again
    at.selectbox(key="head").set_value(1).run()
    assert not at.exception and calls == ["tiny", "tiny"]


def test_a_page_run_on_its_own_looks_the_version_up_itself(tiny):
    at = AppTest.from_function(show_current_checkpoint)
    at.session_state["checkpoint"] = "tiny"
    at.run()
    assert not at.exception and at.markdown[0].value == repr(tiny)


def test_one_choice_is_one_cache_entry_however_it_is_passed(tiny, monkeypatch):
    calls = []
    real = core.TranslationModel.attend
    monkeypatch.setattr(core.TranslationModel, "attend", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    first = cache.attend(tiny, "the quick brown fox")
    again = cache.attend(tiny, "the quick brown fox", None, 1)
    assert len(calls) == 1 and again.tgt == first.tgt
    view = cache.attention_view(tiny, "the quick brown fox", kind="cross", words=True)
    assert cache.attention_view(tiny, "the quick brown fox", None, 1, "cross", True, True) is view   # shared
    expected = first.view("cross", words=True)
    assert view.rows == expected.rows and np.array_equal(view.maps, expected.maps) and len(calls) == 1


def test_query_and_key_vectors_are_computed_once_per_checkpoint_version(tiny, monkeypatch):
    runs = []
    real = qk.collect
    monkeypatch.setattr(qk, "collect", lambda *a, **k: runs.append(1) or real(*a, **k))
    sets = cache.qk_vectors(tiny)
    assert cache.qk_vectors(tiny) is sets and runs == [1]                      # one object, shared by sessions
    assert set(sets) == {"enc_self", "dec_self", "cross"}
    pairs, _ = cache.qk_sentences(tiny)
    assert len(sets["enc_self"].pairs) == len(pairs)
