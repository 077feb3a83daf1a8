"""PNG/SVG export of figures (app/figures/export.py) and the download menu of app.display.show_figure."""
import altair as alt
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from app.figures import export


def small_plotly():
    return go.Figure(go.Heatmap(z=[[0.0, 1.0], [0.5, 0.25]]), layout=dict(title="tiny", width=300, height=200))


def small_altair():
    return alt.Chart(pd.DataFrame({"step": [1, 2, 3], "lr": [0.1, 0.3, 0.2]})).mark_line().encode(x="step", y="lr")


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="format"):
        export.render(export.figure_spec(small_plotly()), "jpeg", True)


@pytest.mark.slow
def test_altair_to_svg_and_png():
    if export.export_problem(plotly=False):
        pytest.skip(export.export_problem(plotly=False))
    chart = small_altair()
    assert export.figure_bytes(chart, "svg").lstrip().startswith(b"<svg")
    assert export.figure_bytes(chart, "png").startswith(b"\x89PNG")


@pytest.mark.slow
def test_plotly_to_svg_through_kaleido():
    """Slow (kaleido starts a headless Chromium, 4-25 s here), so one format only."""
    if export.export_problem(plotly=True):
        pytest.skip(export.export_problem(plotly=True))
    svg = export.figure_bytes(small_plotly(), "svg")
    assert svg.lstrip().startswith(b"<svg") and b"tiny" in svg


def _page():
    import altair as alt
    import pandas as pd
    import plotly.graph_objects as go

    from app.display import show_figure
    show_figure(go.Figure(go.Bar(x=[1, 2], y=[3, 4])), "bars", key="bars")
    show_figure(alt.Chart(pd.DataFrame({"a": [1, 2]})).mark_bar().encode(x="a"), "chart", key="chart")
    show_figure(go.Figure(go.Bar(x=[1], y=[2])), "no_key_1")            # no keys: no duplicate-ID error
    show_figure(go.Figure(go.Bar(x=[1], y=[2])), "no_key_2")


@pytest.mark.slow
def test_every_figure_gets_png_svg_and_html_buttons():
    at = AppTest.from_function(_page).run()
    assert not at.exception
    if export.export_problem(True) or export.export_problem(False):
        pytest.skip("an exporter is missing on this machine")
    assert {b.key for b in at.button} == {f"download:{name}:{fmt}" for name in ("bars", "chart", "no_key_1", "no_key_2")
                                          for fmt in ("png", "svg", "html")}
    assert not at.get("download_button")                  # nothing is drawn before a click


@pytest.mark.slow
def test_a_click_on_html_makes_the_file_and_offers_it_in_the_buttons_place():
    at = AppTest.from_function(_page).run()
    at.button(key="download:bars:html").click().run()
    assert not at.exception
    (save,) = at.get("download_button")
    assert save.proto.label == "Save html" and "download:bars:html" not in {b.key for b in at.button}


@pytest.mark.slow
def test_a_missing_exporter_gives_a_readable_message_and_keeps_plotlys_html(monkeypatch):
    import app.display
    monkeypatch.setattr(app.display, "export_problem", lambda plotly=True: "Saving figures needs kaleido.")
    at = AppTest.from_function(_page).run()
    assert not at.exception
    assert [i.value for i in at.info] == ["Saving figures needs kaleido."] * 4
    assert {b.key for b in at.button} == {f"download:{n}:html" for n in ("bars", "no_key_1", "no_key_2")}  # Plotly's


def test_a_figure_as_html_carries_its_javascript():
    """Plotly's JavaScript inside the file, no script from a CDN: it draws offline (the browser test opens one)."""
    page = export.figure_bytes(small_plotly(), "html").decode()
    assert "<html" in page and "tiny" in page and len(page) > 3_000_000         # plotly.min.js is ~4.8 MB
    assert "<script src=" not in page and 'src="http' not in page       # (plotly.js names a CDN only for geo maps)
