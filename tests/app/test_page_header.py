"""app.page_header: every page gets the compact header's style, sent where it takes no room on the page (the browser
test tests/browser/test_browser.py measures what it does at 1280x720)."""
import pytest
from streamlit.testing.v1 import AppTest

from app.page_header import COMPACT_HEADER_CSS
from core.paths import REPO


@pytest.mark.slow
def test_every_rerun_sends_the_compact_header_style_outside_the_page(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "none"))       # the untrained model only
    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=300).run()
    assert not at.exception, [e.value for e in at.exception]
    styles = [h for h in at.get("html") if COMPACT_HEADER_CSS in h.proto.body]
    assert len(styles) == 1                     # in Streamlit's event container: not an element of the page
    assert not any(COMPACT_HEADER_CSS in h.proto.body for h in at.main.get("html") + at.sidebar.get("html"))


def test_the_compact_header_keeps_the_title_above_the_section_headings():
    sizes = {h: float(COMPACT_HEADER_CSS.split(f"stMain\"] {h} {{ font-size: ")[1].split("rem")[0])
             for h in ("h1", "h2", "h3")}
    assert sizes["h1"] < 2.75 and sizes["h1"] > sizes["h2"] > sizes["h3"]          # smaller than Streamlit's 2.75rem
