"""What a class sees first: sentences that suit the checkpoint, the paper's page on a news model, presenter
mode, readable figures, and the details that looked broken on a projector.

The app runs through app/main.py with AppTest, on a temporary checkpoints folder holding two tiny models
that stop translating at once: "a-captions" (first alphabetically, its card lists demo sentences) and
"b-news" (its card only names its data folder, data/wmt-en-de).
"""
import json

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

import core
from app import demo
from app.figures import paper, positional, schedule, sdpa, style, training
from app.figures.attention import head_view_figure
from tests.helpers import stopping_model
from core.studies.paper_figures import word_view
from core.paths import REPO

MAIN = str(REPO / "app" / "main.py")
CAPTIONS = ["Two dogs run on the grass.", "A girl is reading a book."]
NEWS_DEFAULT = "We must protect the environment for our children."


@pytest.fixture(scope="module")
def two_domains(tmp_path_factory, tokenizer):
    """A caption checkpoint and a news checkpoint (six encoder layers, so that the paper's layer 5 exists)."""
    model = stopping_model(len(tokenizer), N=6, N_dec=1)       # ends every translation at once: fast
    root = tmp_path_factory.mktemp("checkpoints")
    core.save_checkpoint(root / "a-captions", model, tokenizer,
                         {"name": "a-captions", "demo": {"domain": "captions", "sentences": CAPTIONS}})
    core.save_checkpoint(root / "b-news", model, tokenizer, {"name": "b-news", "data": {"folder": "data/wmt-en-de"}})
    return root


@pytest.fixture
def app(two_domains, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(two_domains))
    return lambda: AppTest.from_file(MAIN, default_timeout=180).run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


# ---- demo sentences (pure) ----

def test_domain_comes_from_the_card_or_the_name_of_the_data():
    assert demo.domain({"demo": {"domain": "captions"}, "data": {"folder": "data/wmt-en-de"}}) == "captions"
    assert demo.domain({"data": {"folder": "data/multi30k"}}) == "captions"
    assert demo.domain({"data": {"prep_report": {"corpus": "/x/Multi30K"}}}) == "captions"
    assert demo.domain({"data": {"folder": "data/wmt-en-de"}}) == "news"
    assert demo.domain(None) == demo.domain({"demo": "odd", "data": 3}) == "news"      # odd cards: no crash


def test_the_shipped_cards_start_on_sentences_of_their_own_domain():
    root = REPO / "checkpoints"
    for name, kind in [("multi30k-small", "captions"), ("news-small", "news")]:
        if not (root / name / "card.json").exists():
            pytest.skip(f"checkpoints/{name} is not here")
        card = json.loads((root / name / "card.json").read_text(encoding="utf-8"))
        assert demo.domain(card) == kind
        assert demo.default_sentence(card) == card["demo"]["sentences"][0]


def test_examples_put_the_cards_sentences_first_and_mark_the_paper_as_off_domain():
    card = {"demo": {"domain": "captions", "sentences": CAPTIONS + ["  ", 7]}}
    ex = demo.examples(card)
    assert list(ex.values())[:2] == CAPTIONS and demo.default_sentence(card) == CAPTIONS[0]
    paper_labels = [label for label, s in ex.items() if "governments have passed new laws" in s]
    assert len(paper_labels) == 1 and "news, not image captions" in paper_labels[0]
    news = demo.examples({"name": "some-news-model"})
    assert next(iter(news.values())) == NEWS_DEFAULT
    assert not any("news, not" in label for label in news)


# ---- the app: first screen, paper page, presenter mode ----

@pytest.mark.slow
def test_explorer_starts_on_the_checkpoints_own_sentence_and_follows_a_switch(app):
    at = ok(app())
    assert at.session_state["checkpoint"] == "a-captions"
    assert at.text_area(key="src").value == CAPTIONS[0]
    options = at.selectbox(key="example_a-captions").options
    assert options[0] == f"Demo of this model: {CAPTIONS[0]}"
    assert any("news, not image captions" in o for o in options)
    assert any("image captions" in c.value for c in at.sidebar.caption)

    at.sidebar.selectbox(key="checkpoint").set_value("b-news").run()
    assert ok(at).text_area(key="src").value == NEWS_DEFAULT          # untouched text follows the model
    at.text_area(key="src").set_value("The cat sat on the mat.").run()
    at.sidebar.selectbox(key="checkpoint").set_value("a-captions").run()
    assert ok(at).text_area(key="src").value == "The cat sat on the mat."   # typed text stays


@pytest.mark.slow
def test_paper_page_starts_on_the_news_checkpoint_until_one_is_picked(app):
    at = ok(app())
    assert at.session_state["checkpoint"] == "a-captions"               # the first one, on the explorer
    at.switch_page("screens/paper_figures.py").run()
    assert ok(at).session_state["checkpoint"] == "b-news"
    assert not any("The paper's sentences are news" in i.value for i in at.info)
    # Figure 3 starts with its best head alone; more are on demand
    (heads3,) = [m for m in at.multiselect if m.key.startswith("pf3_heads_b-news")]
    assert len(heads3.value) == 1
    grid3 = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.key == "pf3_grid")
    assert len(grid3["layout"]["shapes"]) == 1                          # the score grid boxes the head drawn

    at.sidebar.selectbox(key="checkpoint").set_value("a-captions").run()      # a teacher's choice sticks
    assert any("The paper's sentences are news" in i.value for i in ok(at).info)
    at.switch_page("screens/explorer.py").run()
    at.switch_page("screens/paper_figures.py").run()
    assert ok(at).session_state["checkpoint"] == "a-captions"


def effective(layout: dict, *path):
    """A layout value as Plotly draws it: set on the figure, else from its template."""
    for source in (layout, layout.get("template", {}).get("layout", {})):
        node = source
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def row_px(layout: dict) -> float:
    """The height of one row of a heatmap's cells, in px: the figure's height less its margins, over the rows."""
    return (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]) / len(layout["yaxis"]["ticktext"])


@pytest.mark.slow
def test_presenter_mode_enlarges_the_text_of_every_figure(app):
    at = ok(app())
    normal = specs(at)[0]["layout"]                          # the explorer's map
    at.sidebar.toggle(key="presenter").set_value(True).run()
    big = specs(ok(at))[0]["layout"]
    for path in [("font", "size"), ("title", "font", "size"), ("xaxis", "tickfont", "size"),
                 ("yaxis", "tickfont", "size"), ("margin", "t"), ("margin", "l")]:
        assert effective(big, *path) == pytest.approx(1.5 * effective(normal, *path), abs=1), path
    # the map's rows grow less than its text, so that the whole map stays on a projector's one screen, yet each row
    # stays taller than its labels (they never touch)
    assert effective(big, "yaxis", "tickfont", "size") < row_px(big) < 1.5 * row_px(normal)
    assert effective(normal, "xaxis", "tickfont", "color") == style.INK
    assert effective(normal, "yaxis", "title", "font", "size") >= 13


@pytest.mark.slow
def test_the_explorers_whole_map_fits_the_room_under_its_controls_words_on_top(app):
    """The map, its column words on top as in the paper's figures, is no taller than the room a 1280x720 first screen
    leaves it (MAP_HEIGHT), in both modes (tests/browser/test_share_browser.py measures it in a browser)."""
    from app.figures.attention import MAP_HEIGHT
    at = ok(app())
    # presenter mode's rows are at least 21 px (its labels are 19.5 px): a whole map there is one of up to ~12 words
    for presenter, sentence in [(False, "A man in a blue shirt is standing on a ladder with a red bucket in his hand."),
                                (True, "A man in a blue shirt is standing on a ladder.")]:
        at.text_area(key="src").set_value(sentence).run()
        at.sidebar.toggle(key="presenter").set_value(presenter).run()
        layout = specs(ok(at))[0]["layout"]
        assert layout["xaxis"]["side"] == "top" and not layout["xaxis"]["title"].get("text")
        assert layout["height"] <= MAP_HEIGHT + 2, (presenter, layout["height"])      # the map's top at 340 px
        assert layout["margin"]["b"] <= 15                      # nothing under the map


# ---- readable figures (pure) ----

def test_the_template_gives_every_new_figure_dark_readable_text():
    style.install()
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]))
    t = fig.layout.template.layout
    assert t.font.size == style.SIZES["base"] and t.font.color == style.INK
    assert t.xaxis.tickfont.size == t.yaxis.tickfont.size == style.SIZES["tick"] >= 12
    assert fig.layout.template.data.heatmap[0].colorbar.tickfont.color == style.INK
    assert style.readable(fig) is fig                         # on screen: nothing to do per figure


def test_presenter_mode_scales_every_size_on_a_copy():
    style.install()
    fig = go.Figure(go.Heatmap(z=[[0, 1], [1, 0]]))
    fig.update_xaxes(tickfont=dict(size=10))                 # a builder's own size
    fig.update_layout(height=300, margin=dict(t=40))
    big = style.readable(fig, presenter=True)
    assert big is not fig and fig.layout.xaxis.tickfont.size == 10 and fig.layout.height == 300   # untouched
    assert big.layout.xaxis.tickfont.size == pytest.approx(15) and big.layout.height == 450
    assert big.layout.margin.t == 60
    assert big.layout.template.layout.yaxis.tickfont.size == round(13 * 1.5)
    assert big.layout.template.layout.font.size == round(14 * 1.5)


def test_readable_configures_altair_charts_without_changing_them():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    config = style.readable(chart, presenter=True).to_dict()["config"]
    assert config["axis"]["labelFontSize"] == round(13 * 1.5) and config["title"]["fontSize"] == round(17 * 1.5)
    assert "axis" not in chart.to_dict().get("config", {})


def test_fit_title_wraps_to_the_width_and_never_splits_an_escaped_token():
    title = "Figure 3, layer 5: 'making', heads 1, 2, 3, 4, 5, 6, 7 and 8 of the &lt;/s&gt; model"
    lines = style.fit_title(title, 300, size=17).split("<br>")
    assert len(lines) > 1 and " ".join(lines) == title
    assert all(len(line) <= (300 - 20) / (0.58 * 17) for line in lines)
    assert style.fit_title("short", 600) == "short"


# ---- the details that looked broken ----

def test_figure3_title_is_short_and_its_legend_says_only_heads():
    pieces = "▁It ▁is ▁making ▁the ▁process ▁more ▁difficult .".split() + ["</s>"]
    attn = np.full((6, 8, len(pieces), len(pieces)), 1 / len(pieces))
    view = word_view(attn, pieces)
    (fig,) = paper.figure_set(3, view, 4, [2]).values()
    assert fig.layout.title.text == "Figure 3, layer 5: 'making', head 3"
    assert fig.layout.legend.title.text == "heads"
    many = paper.figure_set(3, view, 4, list(range(8)))["figure3"]
    assert "heads 1, 2, 3, 4, 5, 6, 7 and 8" in many.layout.title.text.replace("<br>", " ")


def test_a_long_head_view_title_wraps_inside_the_figure():
    toks = ["▁a", "▁b", "</s>"]
    title = "A very long title that would not fit into a figure of this width without being cut off " * 2
    fig = head_view_figure(toks, toks, np.full((2, 3, 3), 1 / 3), title=title, layout="columns")
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) > 2 and fig.layout.margin.t >= 50 + 22 * (len(lines) - 1)


def test_step_by_step_titles_sit_above_the_column_labels():
    fig = sdpa.matrix_figure(np.eye(2), "3. Softmax of each row: weights", ["query 1", "query 2"], ["key 1", "key 2"])
    assert fig.layout.xaxis.side == "top" and fig.layout.title.yref == "container" and fig.layout.title.yanchor == "top"
    lines = fig.layout.title.text.count("<br>") + 1
    assert fig.layout.margin.t >= 45 + 22 * lines                      # room for the title and, below it, the labels


def test_source_gain_title_is_short_with_the_explanation_as_subtitle():
    valids = pd.DataFrame({"step": [1, 2], "source_gain": [0.1, 0.5], "bleu": [1.0, 2.0]})
    charts = training.training_charts(pd.DataFrame(), valids)
    title = charts["source_gain"].to_dict()["title"]
    assert title["text"] == "Source gain" and any("ignores its source" in s for s in title["subtitle"])
    assert all(len(s) <= 60 for s in title["subtitle"])


def test_learning_rate_legend_has_no_disabled_channel():
    curve = schedule.schedule_curve(512, 100, last_step=300, points=20)
    enc = schedule.logged_vs_formula_chart(curve, curve, "t").to_dict()["encoding"]
    # a legend disabled on one channel of a field and shown on the other: Vega's 'Conflicting legend property'
    assert enc["color"]["legend"] == enc["strokeDash"]["legend"] and enc["strokeDash"]["legend"] is not None


def test_pe_matrix_page_groups_sines_and_cosines_by_default():
    order = positional.display_order(8, "interleaved")
    assert order == [0, 2, 4, 6, 1, 3, 5, 7]
    assert positional.display_order(8, "concat") == list(range(8))
    assert positional.display_order(8, "interleaved", grouped=False) == list(range(8))


def test_figures_show_byte_pieces_as_the_characters_they_stand_for():
    from app.figures.attention import heatmap_figure
    from app.figures.heads import maps_side_by_side
    toks = ["▁20", "<0x39>", "</s>"]
    fig = heatmap_figure(np.eye(3), toks, toks)
    assert list(fig.layout.yaxis.ticktext) == ["▁20", "9", "&lt;/s&gt;"]
    words = [t for tr in head_view_figure(toks, toks, np.full((1, 3, 3), 1 / 3)).data
             if tr.meta and "tokens" in tr.meta for t in tr.text]
    assert "9" in words and "<0x39>" not in words
    assert list(maps_side_by_side(np.eye(3), np.eye(3), toks, toks, ("a", "b")).layout.xaxis.ticktext)[1] == "9"


def test_alignment_figures_take_the_apps_text_sizes():
    """They once set their own 12 px font for the whole figure, smaller than every other page's 14."""
    import numpy as np

    from app.figures.alignment import aer_grid_figure, alignment_figure
    style.install()
    figs = [alignment_figure(np.full((2, 3), 1 / 3), ["ein", "Mann"], ["a", "man", "</s>"], {"model": {(0, 0)}}),
            aer_grid_figure({"-1": [[0.5, 0.4, 0.45]]}, "AER")]
    for fig in figs:
        assert fig.layout.font.size is None                   # the template's: style.SIZES["base"]
        assert style.readable(fig, presenter=True).layout.template.layout.font.size == round(14 * 1.5)
