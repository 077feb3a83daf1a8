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


def test_altair_to_svg_and_png():
    if export.export_problem(plotly=False):
        pytest.skip(export.export_problem(plotly=False))
    chart = small_altair()
    assert export.figure_bytes(chart, "svg").lstrip().startswith(b"<svg")
    assert export.figure_bytes(chart, "png").startswith(b"\x89PNG")


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


def test_every_figure_gets_png_and_svg_buttons():
    at = AppTest.from_function(_page).run()
    assert not at.exception
    if export.export_problem(True) or export.export_problem(False):
        pytest.skip("an exporter is missing on this machine")
    buttons = at.get("download_button")
    assert {b.key for b in buttons} == {"download:bars:png", "download:bars:svg", "download:chart:png",
                                        "download:chart:svg", None}
    assert len(buttons) == 8


def test_a_missing_exporter_gives_a_readable_message(monkeypatch):
    import app.display
    monkeypatch.setattr(app.display, "export_problem", lambda plotly=True: "Saving figures needs kaleido.")
    at = AppTest.from_function(_page).run()
    assert not at.exception and not at.get("download_button")
    assert [i.value for i in at.info] == ["Saving figures needs kaleido."] * 4
