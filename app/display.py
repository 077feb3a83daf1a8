"""Figures on a page: drawn readable for the presenter setting, with PNG and SVG downloads, and the clicks on them."""
from __future__ import annotations

import streamlit as st

from app.file_button import file_button
from app.figures.export import DOWNLOADS, export_problem, figure_spec, is_plotly, render
from app.figures.style import readable
from app.sidebar import presenter_mode


def show_figure(fig, name: str, key: str | None = None, styled: bool = False, **chart_kwargs):
    """Draw a Plotly or Altair figure with PNG and SVG downloads; returns what st.plotly_chart/altair_chart return.

    name: the file name without extension. styled: the figure already went through app.figures.style.readable
    for the current presenter setting (restyling a Plotly figure costs tens of ms). chart_kwargs go to the
    chart call (e.g. on_select=...).
    """
    if not styled:
        fig = readable(fig, presenter=presenter_mode())
    plotly = is_plotly(fig)
    if plotly:
        state = st.plotly_chart(fig, key=key, theme=None, config={      # theme=None: keep our template's text
            "displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}},
            **chart_kwargs)
    else:
        state = st.altair_chart(fig, key=key, **chart_kwargs)
    download_menu(fig, name, key)
    return state


def download_menu(fig, name: str, key: str | None = None) -> None:
    """A small popover with PNG, SVG and HTML buttons (HTML: interactive, Plotly's JavaScript inside, so it opens
    offline). The file is drawn only when a button is clicked (kaleido needs seconds a figure), then saved with a
    second click (app.file_button says why). Without a key, the buttons are told apart by the figure's name."""
    plotly = is_plotly(fig)
    sub = (lambda part: f"download:{key}{part}") if key else (lambda part: None)
    with st.popover("⬇ PNG / SVG / HTML", key=sub(""),
                    help="Save this figure as an image, or as an interactive HTML file that opens without network"):
        problem = export_problem(plotly)
        if problem:
            st.info(problem)
        # a Plotly figure's HTML needs no browser to draw it: it stays on offer when PNG and SVG cannot be made
        offered = DOWNLOADS if not problem else {"html": DOWNLOADS["html"]} if plotly else {}
        if not offered:
            return
        cols = st.columns(len(offered))
        for col, (fmt, mime) in zip(cols, offered.items()):
            with col:
                file_button(fmt.upper(), lambda fmt=fmt: render(figure_spec(fig), fmt, plotly), f"{name}.{fmt}",
                            mime, key=f"download:{key or name}:{fmt}", making="Drawing…", save_label=f"Save {fmt}")
        st.caption("A click draws the file (a few seconds); a second click saves it.")


def clicked_numbers(event, n: int) -> list | None:
    """The first n numbers of the customdata of the first clicked point that has them, from a Plotly chart's
    selection event (st.session_state[chart key]); None without one.

    A point's customdata arrives as a list, as a single number, or (a typed array) as {"0": ..., "1": ...}."""
    for point in ((event or {}).get("selection") or {}).get("points", []):
        data = point.get("customdata")
        if isinstance(data, dict):
            data = [data.get(str(i)) for i in range(n)]
        elif isinstance(data, (int, float)):
            data = [data]
        if isinstance(data, (list, tuple)) and len(data) >= n and all(isinstance(x, (int, float)) for x in data[:n]):
            return list(data[:n])
    return None
