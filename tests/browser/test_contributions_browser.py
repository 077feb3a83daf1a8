"""End to end: the explorer's "Show:" in a real browser draws the attention weights, the norm-based map and
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


def wait_for_z(page, op: str, before: str) -> None:
    """Until the map's z is (op "===") or is not (op "!==") `before`. During a rerun the chart may be gone for a
    moment: no chart, or one without data yet, is not an answer (and must not throw)."""
    page.wait_for_function(f"() => {{ const p = document.querySelector('.js-plotly-plot'); "
                           f"return !!(p && p.data && p.data[0]) && JSON.stringify(p.data[0].z) {op} {before!r}; }}")


def test_the_three_views_in_a_real_browser(app_url):
    with browser_page() as page:
        page.goto(app_url + "/?text=A+man+is+standing+on+a+ladder.")
        page.wait_for_selector(".js-plotly-plot text.gtitle")
        before = heatmap_z(page)
        for label, words in [("weighted by value size", "Kobayashi"), ("contributions", "Ferrando")]:
            page.get_by_text(label, exact=True).first.click()
            page.get_by_text(words, exact=False).first.wait_for()
            wait_for_z(page, "!==", before)
            page.screenshot(path=str(ARTIFACTS / f"explorer_show_{label.replace(' ', '_')}.png"))
        page.get_by_text("attention weights", exact=True).first.click()
        wait_for_z(page, "===", before)
        assert page.locator('[data-testid="stException"]').count() == 0
