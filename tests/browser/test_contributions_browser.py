"""End to end (issue 25): the explorer's "Show:" in a real browser draws the attention weights, the norm-based map and
the ALTI+ contributions of the same sentence, each with its explanation, and no Streamlit exception box."""
import pytest

from tests.browser.chromium import ARTIFACTS, browser_page, serve

pytestmark = pytest.mark.slow      # minutes: a real server and a real browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app on a free port with an empty checkpoints folder (the untrained model: a fast start)."""
    with serve(tmp_path_factory.mktemp("checkpoints"), tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


def heatmap_z(page) -> str:
    return page.evaluate("() => JSON.stringify(document.querySelector('.js-plotly-plot').data[0].z)")


def test_the_three_views_in_a_real_browser(app_url):
    with browser_page() as page:
        page.goto(app_url + "/?text=A+man+is+standing+on+a+ladder.")
        page.wait_for_selector(".js-plotly-plot text.gtitle")
        before = heatmap_z(page)
        for label, words in [("weighted by value size", "Kobayashi"), ("contributions", "Ferrando")]:
            page.get_by_text(label, exact=True).first.click()
            page.get_by_text(words, exact=False).first.wait_for()
            page.wait_for_function(f"() => JSON.stringify(document.querySelector('.js-plotly-plot').data[0].z) "
                                   f"!== {before!r}")
            page.screenshot(path=str(ARTIFACTS / f"explorer_show_{label.replace(' ', '_')}.png"))
        page.get_by_text("attention weights", exact=True).first.click()
        page.wait_for_function(f"() => JSON.stringify(document.querySelector('.js-plotly-plot').data[0].z) "
                               f"=== {before!r}")
        assert page.locator('[data-testid="stException"]').count() == 0
