"""app.url_state: a page's controls read from and written to its URL, kept across a visit to another page, and a
link's odd values (unknown checkpoint, layer 9 of 6, a word for a number, a 50,000-character sentence) turned into
the nearest sensible view with a notice. The readers are tested alone; the pages through app/main.py with AppTest,
on a folder holding two tiny checkpoints."""
import pytest
from streamlit.testing.v1 import AppTest

import core
from app import url_state
from core.paths import REPO
from tests.helpers import stopping_model

MAIN = str(REPO / "app" / "main.py")


# ---- the readers (pure) ----

def test_a_number_counts_from_one_in_the_url_and_gives_the_nearest_in_range():
    layer = url_state.number("layer", "layer", 6, 4, "layer")
    assert layer.read("6") == 5 and layer.write(5) == "6"
    with pytest.raises(url_state.LinkValueError, match="There is no layer 9: this model has layers 1 to 6") as e:
        layer.read("9")
    assert e.value.nearest == 5
    with pytest.raises(url_state.LinkValueError, match="not a layer number; showing layer 5") as e:
        layer.read("five")
    assert e.value.nearest == 4
    assert url_state.number("pair", "al_pair", 10, 1, "pair", first=1).read("3") == 3     # a 1-based control


def test_choices_flags_lists_and_text():
    kind = url_state.choice("kind", "kind", ["enc_self", "cross"], "enc_self", "kind")
    assert kind.read("cross") == "cross"
    with pytest.raises(url_state.LinkValueError) as e:
        kind.read("<script>")
    assert e.value.nearest == "enc_self"
    beam = url_state.choice("decoding", "beam", {"greedy": 1, "beam": 4}, 1, "decoding")
    assert beam.read("beam") == 4 and beam.write(4) == "beam"
    words = url_state.flag("words", "words", True)
    assert words.read("0") is False and words.read("yes") is True and words.write(False) == "0"
    heads = url_state.numbers("heads3", "k", 8, [2], "head")
    assert heads.read("3,7") == [2, 6] and heads.write([2, 6]) == "3,7"
    with pytest.raises(url_state.LinkValueError) as e:
        heads.read("3,70")
    assert e.value.nearest == [2]
    text = url_state.text("text", "src")
    with pytest.raises(url_state.LinkValueError, match="50,000 characters") as e:
        text.read("x" * 50_000)
    assert len(e.value.nearest) == url_state.MAX_TEXT
    assert url_state.slug("Compare checkpoints") == "compare-checkpoints" and url_state.slug("Atlas") == "atlas"


# ---- the pages (AppTest through app/main.py) ----

@pytest.fixture(scope="module")
def two_models(tmp_path_factory, tokenizer):
    model = stopping_model(len(tokenizer), N=6, N_dec=2)
    root = tmp_path_factory.mktemp("checkpoints")
    for name in ("a-model", "b-model"):
        core.save_checkpoint(root / name, model, tokenizer, {"name": name})
    return root


@pytest.fixture
def app(two_models, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(two_models))

    def start(**params) -> AppTest:
        at = AppTest.from_file(MAIN, default_timeout=180)
        at.query_params.update(params)
        return ok(at.run())
    return start


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def notices(at: AppTest) -> list[str]:
    return [t.proto.body for t in at.toast]


@pytest.mark.slow
def test_a_link_opens_the_same_explorer_view_and_the_url_follows_the_controls(app):
    at = app(checkpoint="b-model", text="The cat sat.", kind="cross", layer="2", head="3", view="grid", words="0",
             decoding="beam")
    s = at.session_state
    assert (s["checkpoint"], s["src"], s["kind"], s["layer"], s["head"], s["view"], s["words"], s["beam"]) == \
        ("b-model", "The cat sat.", "cross", 1, 2, "grid", False, 4)
    assert not notices(at)
    assert at.query_params["layer"] == "2" and at.query_params["checkpoint"] == "b-model"
    at.selectbox(key="head").set_value(3).run()
    assert ok(at).query_params["head"] == "4"                     # the URL follows the control
    at.segmented_control(key="view").set_value("one").run()
    assert "view" not in ok(at).query_params                       # back at its default: left out
    (link,) = [c.value for c in at.sidebar.get("code")]             # "Copy link" (no address in a test: the query)
    assert link.startswith("?") and "checkpoint=b-model" in link and "head=4" in link and "view=" not in link


@pytest.mark.slow
def test_odd_links_open_the_nearest_view_with_a_notice(app):
    at = app(checkpoint="no-such-model", layer="9", head="eight", kind="sideways", text="x" * 50_000)
    said = " ".join(notices(at))
    assert "no checkpoint named 'no-such-model'" in said and "There is no layer 9" in said
    assert "'eight' is not a head number" in said and "'sideways' is not a kind" in said and "50,000" in said
    s = at.session_state
    assert s["checkpoint"] == "a-model" and s["kind"] == "enc_self" and s["layer"] == 5 and s["head"] == 0
    assert len(s["src"]) == url_state.MAX_TEXT
    at.selectbox(key="head").set_value(1).run()
    assert not ok(at).toast                                          # a notice is said once, not on every rerun


@pytest.mark.slow
def test_controls_keep_their_values_across_a_visit_to_another_page(app):
    at = app()
    at.segmented_control(key="kind").set_value("dec_self").run()
    at.selectbox(key="head").set_value(3).run()
    at.switch_page("screens/checkpoint.py").run()
    at.switch_page("screens/explorer.py").run()
    ok(at)
    assert at.session_state["kind"] == "dec_self" and at.session_state["head"] == 3


@pytest.mark.slow
def test_other_pages_read_their_links(app):
    at = app(tab="entropy")
    at.switch_page("screens/heads.py")
    at.query_params.update({"tab": "entropy", "kind": "dec_self"})
    ok(at.run())
    assert at.session_state["heads_tab"] == "Entropy"
    at.switch_page("screens/qk.py")
    at.query_params.clear()
    at.query_params.update({"kind": "cross", "layer": "2", "head": "3", "projection": "pca"})
    ok(at.run())
    assert (at.session_state["qk_kind"], at.session_state["qk_layer"], at.session_state["qk_head"]) == ("cross", 1, 2)
    assert at.query_params["head"] == "3"
