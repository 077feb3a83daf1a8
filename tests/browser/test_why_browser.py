"""How it writes' "Why this and not that?" in a real browser on the shipped news checkpoint: at 1280x720 the
section (its method picker and its strips beside the attention) fits one screen and the page's width; on a phone
(390x844) nothing spills sideways and nothing breaks. Screenshots go to artifacts/screenshots/why/ (git-ignored).
"""
from urllib.parse import quote

import pytest

from core.paths import REPO
from tests.browser.chromium import ARTIFACTS, browser_page, serve, settle
from tests.browser.test_screenshots import CHART

pytestmark = pytest.mark.slow      # a real server and browser: about a minute
FIGURE4 = ("The Law will never be perfect, but its application should be just - this is what we are missing, "
           "in my opinion.")
BOX = """(el) => { const r = el.getBoundingClientRect(); return [r.top, r.bottom, r.left, r.right]; }"""


def test_why_fits_a_projector_and_a_phone(tmp_path):
    if not (REPO / "checkpoints" / "news-small" / "config.json").exists():
        pytest.skip("checkpoints/news-small is not in this checkout")
    shots = ARTIFACTS / "screenshots" / "why"
    shots.mkdir(parents=True, exist_ok=True)
    with serve(REPO / "checkpoints", tmp_path / "streamlit.log") as url, browser_page(720, 1280) as page:
        page.goto(f"{url}/how_it_writes?checkpoint=news-small&step=10&text={quote(FIGURE4)}")
        settle(page)
        page.get_by_text("Why this and not that?", exact=True).click()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        radio = page.get_by_text("Explained by", exact=True)
        radio.scroll_into_view_if_needed()
        chart = page.locator(CHART).last
        assert "Why '" in chart.inner_text()
        top = radio.evaluate(BOX)[0]
        _, bottom, left, right = chart.evaluate(BOX)
        assert bottom - top <= 720 and left >= 0 and right <= 1280, (top, bottom, left, right)
        page.screenshot(path=str(shots / "projector.png"))
        page.set_viewport_size({"width": 390, "height": 844})
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
        chart = page.locator(CHART).last
        chart.scroll_into_view_if_needed()
        assert chart.evaluate(BOX)[3] <= 390 + 1                  # the strips shrink to the phone's width
        page.screenshot(path=str(shots / "phone.png"))
