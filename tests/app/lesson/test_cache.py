"""app/lesson/cache.py's fitting of a figure beside the lesson's text: at most the height given, titles and subplot
titles wrapped to the column's width, presenter text except for a grid of small maps."""
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.lesson import cache as lesson_cache
from app.figures.style import PRESENTER, install
from app.checkpoints import untrained_model
from app.lesson.figures import FIGURES


def test_a_tall_figure_is_made_shorter_and_its_long_title_wraps_at_its_colon():
    install()
    title = "Figure 4, layer 6: only the attentions of 'its', head 5<br>and head 6"
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]), layout=dict(title=title, height=900, width=760,
                                                               margin=dict(t=60, b=100)))
    fitted = lesson_cache._sized(fig, True, 540, width=480)
    assert fitted.layout.height == 540 and fitted.layout.width is None
    text = fitted.layout.title.text
    assert text.startswith("Figure 4, layer 6:<br>") and "head 5 and head 6" in text.replace("<br>", " ")
    lines = text.count("<br>") + 1
    assert lines >= 3 and fitted.layout.margin.t >= 1.3 * 17 * PRESENTER * lines
    assert fitted.layout.margin.b < 100 * PRESENTER                  # shrunk with the figure


def test_subplot_titles_too_wide_for_their_column_wrap_and_their_plots_make_room():
    fig = make_subplots(2, 2, subplot_titles=[f"layer {i}, head {j}: 7 of 8 on target" for i in (1, 2) for j in (1, 2)])
    fig.update_layout(height=500)
    top = fig.layout.yaxis.domain[1]
    wide = lesson_cache._sized(go.Figure(fig), False, None, width=1200)          # room enough: left as they are
    assert "<br>" not in wide.layout.annotations[0].text and wide.layout.yaxis.domain[1] == top
    narrow = lesson_cache._sized(go.Figure(fig), False, None, width=400)
    assert all(a.text.endswith(":<br>7 of 8 on target") for a in narrow.layout.annotations)
    assert narrow.layout.yaxis.domain[1] < top and narrow.layout.annotations[0].y == narrow.layout.yaxis.domain[1]


def test_a_grid_of_small_maps_keeps_screen_text_in_presenter_mode():
    assert lesson_cache._presenter("watch_it_learn", True) is False
    assert lesson_cache._presenter("figure4", True) is True and lesson_cache._presenter("figure4", False) is False


def test_an_altair_chart_takes_the_height_given_and_wraps_its_title():
    chart = FIGURES["scaling"].answer(untrained_model(), {"d_k": 64, "seed": 0}).fig
    title = "One random query over 10 keys, d_k = 64"
    spec = lesson_cache._sized(chart, True, 500, width=300).to_dict()
    assert spec["height"] == 500 and len(spec["title"]) > 1 and " ".join(spec["title"]) == title
    assert lesson_cache._sized(chart, False, None, width=1200).to_dict()["title"] == title
