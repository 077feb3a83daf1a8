"""Figures to PNG and SVG files: Plotly through kaleido (a headless Chromium), Altair through vl-convert; and to an
interactive HTML file that carries its own JavaScript (Plotly's or Vega's), so that it works offline."""
from __future__ import annotations

import functools
import threading
import warnings

FORMATS = {"png": "image/png", "svg": "image/svg+xml"}          # pictures (the lesson handout embeds them)
DOWNLOADS = {**FORMATS, "html": "text/html"}                    # what a figure's download menu offers
PNG_SCALE = 2          # twice the screen size: sharp enough for slides and papers
_server_lock = threading.Lock()


def is_plotly(fig) -> bool:
    return hasattr(fig, "to_plotly_json")


def figure_spec(fig) -> str:
    """The figure as JSON text: what the renderers below take, and a cache key."""
    return fig.to_json()


@functools.lru_cache(maxsize=4)
def export_problem(plotly: bool = True) -> str | None:
    """Why PNG/SVG export cannot work on this machine, in words, or None if it can."""
    if not plotly:
        try:
            import vl_convert  # noqa: F401
        except ImportError:
            return ("Saving charts needs the package vl-convert-python (`pip install vl-convert-python`). "
                    "Meanwhile, use the chart's ⋯ menu to save it as PNG or SVG.")
        return None
    try:
        import kaleido  # noqa: F401
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return ("Saving figures needs the package kaleido (`pip install kaleido`). "
                "Meanwhile, the camera icon above the figure saves a PNG.")
    try:
        found = Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 any failure to look means: not found
        found = None
    if not found:
        return ("Saving figures needs a Chrome or Chromium browser, which kaleido uses to draw them, and none "
                "was found (on Debian: `apt install chromium`). Meanwhile, the camera icon above the figure "
                "saves a PNG.")
    return None


def _kaleido_server() -> None:
    """One headless Chromium kept for every export (closed at exit): the first export takes seconds, the
    next ones much less, as each would otherwise start its own browser."""
    import kaleido
    with _server_lock:
        kaleido.start_sync_server(silence_warnings=True)


def render(spec: str, fmt: str, plotly: bool = True) -> bytes:
    """JSON spec -> PNG, SVG or HTML bytes."""
    if fmt not in DOWNLOADS:
        raise ValueError(f"format must be one of {list(DOWNLOADS)}, not {fmt!r}")
    # HTML is quick to write and ~5 MB (Plotly's JavaScript): a server's cache would hold 16 of them for nothing
    return figure_html(spec, plotly) if fmt == "html" else _picture(spec, fmt, plotly)


@functools.lru_cache(maxsize=16)
def _picture(spec: str, fmt: str, plotly: bool) -> bytes:
    """JSON spec -> PNG or SVG bytes. Slow the first time (a browser starts), hence cached by spec."""
    if plotly:
        import plotly.io as pio
        _kaleido_server()
        fig = pio.from_json(spec)
        width = fig.layout.width or 1000            # the app lets figures fill the page; a file needs a size
        with warnings.catch_warnings():              # plotly passes options the long-lived server ignores
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            return pio.to_image(fig, format=fmt, width=width, height=fig.layout.height or 600,
                                scale=PNG_SCALE if fmt == "png" else 1)
    import vl_convert as vlc
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec).encode("utf-8")
    return vlc.vegalite_to_png(spec, scale=PNG_SCALE)


def figure_html(spec: str, plotly: bool = True) -> bytes:
    """A figure's JSON spec as one interactive HTML file with its JavaScript inside (no CDN: it draws offline)."""
    if plotly:
        import plotly.io as pio
        return pio.to_html(pio.from_json(spec), include_plotlyjs=True, full_html=True,
                           config={"displaylogo": False}).encode("utf-8")
    import vl_convert as vlc
    return vlc.vegalite_to_html(spec, bundle=True).encode("utf-8")


def figure_bytes(fig, fmt: str) -> bytes:
    """A Plotly figure or Altair chart as PNG, SVG or HTML bytes (for scripts/export_figures.py and the app)."""
    return render(figure_spec(fig), fmt, is_plotly(fig))
