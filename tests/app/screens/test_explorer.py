"""The Attention explorer page, run headless through app/main.py with Streamlit's AppTest.

Checkpoints come from a temporary folder (ATTN_EXPLORER_CHECKPOINTS), so the page uses the untrained
fallback model: nothing here needs checkpoints/ or data/.
"""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core
from core.paths import REPO

MAIN = str(REPO / "app" / "main.py")
UNTRAINED = "(untrained model)"
SHORT = "A man in a blue shirt is on a ladder."


@pytest.fixture
def new_app(tmp_path, monkeypatch):
    """A fresh app session on an empty checkpoints folder, run once with a sentence (None: the page's default)
    and optionally a target translation. The untrained model never stops before its length limit, so
    greedy decoding is slow: most tests give a target (teacher forcing, one forward pass)."""
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))

    def make(src=SHORT, tgt=None):
        at = AppTest.from_file(MAIN, default_timeout=180)
        if src is not None:
            at.session_state["src"] = src
        if tgt is not None:
            at.session_state["tgt"] = tgt
        return at.run()
    return make


def figures(at):
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def array(value):
    """A Plotly array from the JSON spec: a list, or {"dtype", "bdata", "shape"} (base64)."""
    if isinstance(value, dict):
        shape = [int(s) for s in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.asarray(value, dtype=float)


def title(fig):
    return fig["layout"]["title"]["text"]


def assert_healthy(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    # user text is never rendered as HTML
    for el in list(at.markdown) + list(at.caption):
        assert not el.proto.allow_html


@pytest.mark.slow
def test_page_runs_with_the_untrained_model_and_has_its_widgets(new_app):
    at = new_app(None)
    assert_healthy(at)
    assert any("freshly initialised" in w.value for w in at.sidebar.warning)
    # the untrained model's card names no training data, so it gets the news domain's first sentence
    assert at.text_area(key="src").value == "We must protect the environment for our children."
    assert at.radio(key="beam").options == ["greedy", "beam search (4 beams)"]
    for key in ("kind", "view"):
        assert at.segmented_control(key=key).value is not None
    assert at.selectbox(key="layer").value == 4 and at.selectbox(key="head").value == 0
    assert {t.key for t in at.toggle} >= {"words", "specials"}
    assert at.code and at.code[0].value.strip()                          # the translation
    (fig,) = figures(at)
    assert title(fig) == "Encoder self-attention, layer 5 of 6, head 1 of 8"
    assert fig["data"][0]["type"] == "heatmap" and fig["data"][0]["zmin"] == 0
    assert {"PNG", "SVG", "HTML", "Every map of this sentence (HTML)"} <= {b.label for b in at.button}


@pytest.mark.slow
def test_switching_layer_head_or_view_redraws_without_running_the_model_again(new_app, monkeypatch):
    calls = []
    real_attend = core.TranslationModel.attend
    monkeypatch.setattr(core.TranslationModel, "attend",
                        lambda self, *a, **k: calls.append(a) or real_attend(self, *a, **k))
    at = new_app("Two dogs run across a green field near the old barn.", tgt="Zwei Hunde rennen.")  # not cached yet
    assert_healthy(at)
    assert len(calls) == 1
    z0 = array(figures(at)[0]["data"][0]["z"])

    at.selectbox(key="head").set_value(3).run()
    assert_healthy(at)
    fig = figures(at)[0]
    assert title(fig).endswith("head 4 of 8")
    assert not np.allclose(array(fig["data"][0]["z"]), z0)

    at.selectbox(key="layer").set_value(0).run()
    assert "layer 1 of 6" in title(figures(at)[0])

    at.segmented_control(key="view").set_value("grid").run()
    assert_healthy(at)
    grid, large = figures(at)
    assert grid["layout"]["yaxis"]["ticktext"] == [f"layer {n}" for n in range(1, 7)]
    assert "layer 1 of 6, head 4 of 8" in title(large)

    at.segmented_control(key="view").set_value("lines").run()
    assert_healthy(at)
    (lines,) = figures(at)
    # the head view starts with the selected head alone (eight heads' lines at once are a tangle)
    assert [tr["name"] for tr in lines["data"] if tr.get("showlegend")] == ["head 4"]
    assert lines["layout"]["legend"]["title"]["text"] == "heads"            # no "click to hide" in a saved file
    at.pills(key="hv_heads").set_value([2]).run()
    (lines,) = figures(at)
    assert [tr["name"] for tr in lines["data"] if tr.get("showlegend")] == ["head 3"]

    at.segmented_control(key="kind").set_value("cross").run()
    assert_healthy(at)
    assert title(figures(at)[0]).startswith("Encoder-decoder attention, layer 1 of 3")
    assert len(calls) == 1                          # every switch above reused the cached maps


@pytest.mark.slow
def test_words_special_tokens_and_colour_switches(new_app):
    at = new_app()
    assert figures(at)[0]["data"][0]["zmax"] == 1.0                   # weights compare across heads
    at.toggle(key="stretch").set_value(True).run()
    assert 0 < figures(at)[0]["data"][0]["zmax"] < 1.0                  # the untrained model spreads thin
    # a class sees words first, as every map does; the model's own pieces are one switch away
    assert at.toggle(key="words").value is True
    words = figures(at)[0]["layout"]["yaxis"]["ticktext"]
    assert not any(t.startswith("▁") for t in words) and "&lt;/s&gt;" in words
    assert any("Whole words" in c.value for c in at.caption)
    at.toggle(key="words").set_value(False).run()
    assert_healthy(at)
    pieces = figures(at)[0]["layout"]["yaxis"]["ticktext"]
    assert len(words) < len(pieces) and any(t.startswith("▁") for t in pieces)
    assert any("Subword pieces" in c.value for c in at.caption)
    at.toggle(key="specials").set_value(False).run()
    assert_healthy(at)
    assert "&lt;/s&gt;" not in figures(at)[0]["layout"]["yaxis"]["ticktext"]
    assert any("less than 1" in c.value for c in at.caption)



@pytest.mark.slow
def test_the_map_of_a_caption_is_short_enough_for_the_first_screen(new_app):
    """At 1280x720 the map's cells start at ~402 px (tests/browser measures it): a 12-word sentence's cells must
    take at most 318 px for the whole map, colour bar included, to end on the first screen."""
    at = new_app("A man in a blue shirt is standing on a ladder.", tgt="Ein Mann steht auf einer Leiter.")
    assert_healthy(at)
    layout = figures(at)[0]["layout"]
    assert len(layout["yaxis"]["ticktext"]) == 12                       # eleven words and </s>
    assert layout["height"] - layout["margin"]["t"] - layout["margin"]["b"] <= 720 - 402

@pytest.mark.slow
def test_own_target_translation_gives_teacher_forced_maps(new_app):
    at = new_app()
    at.text_area(key="tgt").input("Ein Mann steht auf einer Leiter.").run()
    assert_healthy(at)
    assert any("Teacher forcing" in m.value for m in at.markdown)
    assert "Leiter" in at.code[0].value


@pytest.mark.slow
@pytest.mark.parametrize("text, message", [("", "empty"), ("   \n\t ", "empty"), ("\x00\x01\x02\x7f", "empty")])
def test_empty_input_gives_a_message(new_app, text, message):
    at = new_app(text)
    assert not at.exception
    assert any(message in w.value for w in at.warning)
    assert not figures(at)


@pytest.mark.slow
@pytest.mark.parametrize("text", [
    "I ❤️ my 🐈 and 👩‍👩‍👧 🇩🇪!",
    "مرحبا بالعالم، שלום עולם",
    "tab\tnull\x00 bell\x07 rtl-override\u202e end\u200b.",
    "**bold** <b>tag</b> <script>alert(1)</script> $x^2$ [link](http://example.com)",
])
def test_unusual_input_is_shown_without_exception(new_app, text):
    at = new_app(text, tgt=text)               # on both sides: labels of the source and of the target
    assert_healthy(at)
    assert len(figures(at)) == 1
    at.segmented_control(key="kind").set_value("cross").run()
    at.toggle(key="words").set_value(False).run()
    assert_healthy(at)
    assert len(figures(at)) == 1


@pytest.mark.slow
def test_very_long_input_is_cut_with_a_notice(new_app):
    at = new_app(SHORT, tgt="Ein Test.")
    at.text_area(key="src").input("The <b>cat</b> sat on the mat. " * 170).run()
    assert_healthy(at)
    assert len(at.text_area(key="src").value) > 5000
    assert any("too long" in i.value for i in at.info)
    assert len(figures(at)) == 1


@pytest.mark.slow
def test_broken_checkpoint_shows_an_error_and_the_untrained_model_stays_pickable(tmp_path, new_app):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(core.preset("tiny", vocab_size=320).to_json())
    (broken / "model.safetensors").write_bytes(b"this is not a safetensors file" * 10)
    (broken / "spm.model").write_bytes(b"garbage")
    at = new_app()
    assert not at.exception
    picker = at.selectbox(key="checkpoint")
    assert picker.value == "broken" and UNTRAINED in picker.options
    assert any("cannot be loaded" in e.value for e in at.error)
    assert not figures(at)
    picker.set_value(UNTRAINED).run()
    assert_healthy(at)
    assert len(figures(at)) == 1


@pytest.mark.slow
def test_the_typed_sentence_and_translation_outlive_a_visit_to_another_page(new_app):
    """Streamlit forgets the value of a widget a rerun does not draw: another page's run must not take the
    student's sentence (or own translation) back to the checkpoint's default."""
    at = new_app(SHORT, tgt="Ein Mann.")
    typed, own = "Three children are playing football in the park.", "Drei Kinder spielen Fußball im Park."
    at.text_area(key="src").input(typed).run()
    at.text_area(key="tgt").input(own).run()
    assert_healthy(at)
    at.switch_page("screens/lr_schedule.py").run()
    assert not at.exception and not at.text_area                     # the explorer's boxes are not drawn
    at.switch_page("screens/explorer.py").run()
    assert_healthy(at)
    assert at.text_area(key="src").value == typed and at.text_area(key="tgt").value == own
    assert "Fußball" in at.code[0].value                               # the maps are those of the kept sentences
