"""The "Which pronoun?" page, run headless with AppTest on a tiny checkpoint and on the untrained model."""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core
from app.figures.pronouns import encoder_rows, form_figure, writing_rows
from tests.helpers import stopping_checkpoint_root
from core.studies import paper_figures as pf
from core.studies import pronouns as P
from core.paths import REPO

PAGE = REPO / "app" / "screens" / "pronouns.py"
NAME = "tiny-pronouns"
TIMEOUT = 180                       # the machine's cores are shared with a training run


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory, tokenizer):
    """checkpoints/tiny-pronouns: a random tiny model whose own translations stop after a few pieces."""
    return stopping_checkpoint_root(tmp_path_factory, tokenizer, NAME, eos_bias=3.0)


@pytest.fixture
def tm(tiny_root, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_root))
    return core.load_checkpoint(tiny_root / NAME)


def page(checkpoint=None) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=TIMEOUT)
    if checkpoint:
        at.session_state["checkpoint"] = checkpoint
    return at.run()


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def spec(chart) -> dict:
    return json.loads(chart.proto.spec)


def values(y) -> list:
    """Plotly may send a numeric array as a typed-array dict ({"dtype", "bdata"}); both come back as a list."""
    if isinstance(y, dict):
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).tolist()
    return list(y)


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.mark.slow
def test_a_set_sentence_shows_the_models_choice_and_where_it_looked(tm):
    at = ok(page(NAME))
    item = P.load_pronoun_set()[0]
    choice = P.form_probabilities(tm, item["en"], item["de"], item["pronoun"])    # computed here, outside the page
    m = metrics(at)
    assert m["The model's choice"] == choice.chosen
    assert m["Right for the antecedent?"] == ("yes" if P.right_for(choice.chosen, item["gender"]) else "no")
    assert m["Share of feminine forms"] == f"{choice.feminine_share:.0%}"
    charts = at.get("plotly_chart")
    assert len(charts) == 4                            # forms, encoder, cross-attention, what decided it
    bars = spec(charts[0])["data"]
    def form_of(x):
        return x.split("<br>")[0].replace(" ✓", "")
    shown = {form_of(x): y for trace in bars for x, y in zip(trace["x"], values(trace["y"]))}
    assert shown == pytest.approx(dict(zip(choice.table.form, choice.table.probability)), rel=1e-4)
    ticks = [x for trace in bars for x in trace["x"]]
    assert sum("✓" in x for x in ticks) == 6 and all(("✓" in x) == x.startswith("ihr") for x in ticks)  # die Bank
    assert [form_of(x) for x in ticks if "in the German" in x] == ["ihre"]
    result = tm.attend(item["en"], tgt=item["de"])
    layer = pf.best_layer(pf.dependency_scores(pf.word_view(result.enc_self, result.src_tokens), "its",
                                               [item["antecedent"]]), k=2)
    titles = [spec(c)["layout"]["title"]["text"] for c in charts]
    assert f"from 'its', layer {layer + 1}" in titles[1] and "while writing 'ihre'" in titles[2]
    assert "Whole-sentence test" in " ".join(md.value for md in at.markdown)
    t = choice.table                                   # the other gender's likeliest form
    other = t[t.form.str.startswith("ihr") != choice.chosen.startswith("ihr")].sort_values("logprob").form.iloc[-1]
    assert titles[3].startswith(f"Why '{choice.chosen}' and not '{other}'?")
    c = tm.contrast(item["en"], choice.prefix, choice.chosen, other)          # the page's default: erasure
    z = spec(charts[3])["data"][0]["z"]
    assert np.ravel(values(z) if isinstance(z, dict) else z).tolist() == pytest.approx(list(c.src_scores), abs=1e-4)


@pytest.mark.slow
def test_own_sentence_unknown_gender_then_masculine(tm):
    at = ok(page(NAME))
    at.selectbox(key="pr_item").set_value(-1).run()
    at.text_input(key="pr_src").set_value("The council approved its budget.").run()
    at.text_input(key="pr_tgt").set_value("Der Rat genehmigte seinen Haushalt.").run()
    ok(at)
    assert metrics(at)["Right for the antecedent?"] == "—"
    ante = at.selectbox(key="pr_ante_The council approved its budget.")
    assert ante.value == 1                                                   # 'council', after 'The'
    at.radio(key="pr_gender").set_value("m").run()
    choice = P.form_probabilities(tm, "The council approved its budget.", "Der Rat genehmigte seinen Haushalt.")
    m = metrics(ok(at))
    assert m["The model's choice"] == choice.chosen
    assert m["Right for the antecedent?"] == ("yes" if choice.chosen.startswith("sein") else "no")


@pytest.mark.slow
def test_sentences_without_a_pronoun_or_a_german_form_are_explained(tm):
    at = ok(page(NAME))
    at.selectbox(key="pr_item").set_value(-1).run()
    at.text_input(key="pr_src").set_value("The bank raised rates.").run()
    assert any("no 'its'" in e.value for e in ok(at).error)
    at.text_input(key="pr_src").set_value("The bank raised its rates.").run()
    at.text_input(key="pr_tgt").set_value("Die Bank erhöhte die Zinsen.").run()
    assert any("none of the forms" in w.value for w in ok(at).warning)
    at.text_input(key="pr_src").set_value("Its rates rose.").run()
    assert any("first word" in e.value for e in ok(at).error)


@pytest.mark.slow
def test_the_untrained_model_works_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    at = ok(page())
    assert any("random" in w.value for w in at.warning)
    at.radio(key="pr_context").set_value("model").run()
    ok(at)


def test_builders_pick_the_right_rows(tm):
    item = P.load_pronoun_set()[0]
    result = tm.attend(item["en"], tgt=item["de"])
    enc, rows, cols = encoder_rows(result.view("enc_self", words=True), 3, 1)       # 'its' is word 3
    assert enc.shape == (tm.cfg.h, len(cols)) and rows[0] == "head 1" and cols[3] == "its"
    assert enc.sum(-1) == pytest.approx(1.0, abs=1e-4)                             # a word's row, merged, sums to 1
    cross, rows, cols = writing_rows(result.view("cross", words=True), 3)          # 'ihre' is word 3 of the German
    assert cross.shape == (tm.cfg.N_dec * tm.cfg.h, len(cols)) and rows[-1] == f"layer {tm.cfg.N_dec} · head {tm.cfg.h}"
    assert cross.sum(-1) == pytest.approx(1.0, abs=1e-4)
    choice = P.form_probabilities(tm, item["en"], item["de"])
    fig = form_figure(choice.table, "ihre", None)
    assert not any("✓" in x for trace in fig.data for x in trace.x)               # unknown gender: no ticks


@pytest.mark.slow
def test_what_decided_it_shows_the_head_picked(tm):
    """The attention beside the pushes follows the head picked (the mean until then)."""
    at = ok(page(NAME))
    item = P.load_pronoun_set()[0]
    choice = P.form_probabilities(tm, item["en"], item["de"], item["pronoun"])
    t = choice.table
    other = t[t.form.str.startswith("ihr") != choice.chosen.startswith("ihr")].sort_values("logprob").form.iloc[-1]
    c = tm.contrast(item["en"], choice.prefix, choice.chosen, other)

    def look():
        z = spec(at.get("plotly_chart")[3])["data"][1]["z"]
        return np.ravel(values(z) if isinstance(z, dict) else z)
    np.testing.assert_allclose(look(), c.cross.mean((0, 1)), atol=1e-5)
    ok(at.selectbox(key="pr_why_head").set_value((1, 2)).run())
    np.testing.assert_allclose(look(), c.cross[1, 2], atol=1e-5)
