"""The "How it writes" page in a real browser at 1280x720, on the shipped news checkpoint: a link opens the paper's
Figure 4 sentence at a step, the three figures draw, Next moves the step (and the link), presenter mode draws them
larger; no exception. Screenshots go to artifacts/screenshots/how_it_writes/ (git-ignored) for a human to look at.
Skipped like tests/browser/test_browser.py when Playwright or Chromium is missing.
"""
from urllib.parse import quote

import pytest

from core.paths import REPO
from tests.browser.chromium import ARTIFACTS, browser_page, serve, settle
from tests.browser.test_screenshots import CHART

pytestmark = pytest.mark.slow      # a real server and browser: about a minute
FIGURE4 = ("The Law will never be perfect, but its application should be just - this is what we are missing, "
           "in my opinion.")


def test_stepping_through_the_figure4_sentence(tmp_path):
    if not (REPO / "checkpoints" / "news-small" / "config.json").exists():
        pytest.skip("checkpoints/news-small is not in this checkout")
    shots = ARTIFACTS / "screenshots" / "how_it_writes"
    shots.mkdir(parents=True, exist_ok=True)
    with serve(REPO / "checkpoints", tmp_path / "streamlit.log") as url, browser_page(720, 1280) as page:
        page.goto(f"{url}/how_it_writes?checkpoint=news-small&step=10&text={quote(FIGURE4)}")
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.locator(CHART).count() >= 3                   # candidates, the beam, where it looked
        assert "seine" in page.locator('[data-testid="stMain"]').inner_text()
        page.screenshot(path=str(shots / "step10.png"))
        page.get_by_role("button", name="Next").click()
        settle(page)
        assert "step=11" in page.url
        page.get_by_text("Presenter mode", exact=True).click()
        settle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(shots / "step11_presenter.png"))
