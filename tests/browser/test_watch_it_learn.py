"""Watch it learn in a real browser: Start, the fragment redraws the maps by itself as the run goes, a second tab
watches the same run, and the page ends with the run's speed; Learn to copy shows its induction head form on the same
server. Screenshots go to artifacts/ (git-ignored)."""
import contextlib
import re

import pytest

from tests.browser.chromium import ARTIFACTS, browser_page, serve, settle

PlaywrightTimeout = pytest.importorskip("playwright.sync_api").TimeoutError

pytestmark = pytest.mark.slow      # a real server and a real browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("checkpoints"), tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


def step_shown(page) -> int:
    text = page.get_by_text(re.compile(r"Started by .* · step")).first.text_content()
    return int(re.search(r"step ([\d,]+) of", text).group(1).replace(",", ""))


def test_a_live_run_redraws_itself_and_is_watched_from_another_tab(app_url):
    with browser_page(height=1400) as page:
        other = page.context.browser.new_page(viewport={"width": 1400, "height": 1400})   # another session
        page.goto(app_url + "/watch_it_learn")
        page.get_by_text("No run yet on this server").wait_for()
        page.get_by_label("Your name (shown to everyone)").fill("Ms Smith")
        page.get_by_label("Your name (shown to everyone)").press("Enter")
        page.get_by_text("Full speed").click()
        page.get_by_role("button", name="Start training").click()
        page.get_by_text(re.compile(r"Started by Ms Smith · step")).wait_for()
        first = step_shown(page)
        other.goto(app_url + "/watch_it_learn")                     # another student's tab: the same run
        other.get_by_text(re.compile(r"Started by Ms Smith")).wait_for()
        assert other.get_by_role("button", name="Stop").is_disabled()
        page.wait_for_function(                                     # no click: the fragment redraws by itself
            f"() => /step ([\\d,]+) of/.test(document.body.innerText) && "
            f"parseInt(document.body.innerText.match(/step ([\\d,]+) of/)[1].replace(',', '')) > {first}")
        page.screenshot(path=str(ARTIFACTS / "watch_it_learn_running.png"))
        # its starter stops it (a run's own end, "finished", is tests/app/screens/test_watch_it_learn.py's): the
        # page ends with the run's speed
        page.get_by_role("button", name="Stop").click()
        page.get_by_text(re.compile(r"^Done: [\d,]+ steps in")).wait_for()
        assert re.search(r"· (stopped|finished)$", page.get_by_text(re.compile(r"Started by Ms Smith")).first
                         .text_content())
        assert page.locator(".js-plotly-plot").count() == 2
        assert not page.locator("[data-testid='stException']").count()
        page.screenshot(path=str(ARTIFACTS / "watch_it_learn_done.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 720})           # a classroom projector
        page.wait_for_timeout(1500)
        maps = page.locator(".js-plotly-plot").first.bounding_box()
        page.screenshot(path=str(ARTIFACTS / "watch_it_learn_1280x720.png"))
        assert maps["y"] + 150 < 720, maps                            # the maps start on the first screen
        other.get_by_text(re.compile(r"^Done: [\d,]+ steps in")).wait_for()


INDUCTION = """(at) => [...document.querySelectorAll('[data-testid="stMetric"]')].some(m =>
    m.innerText.startsWith('induction, L') &&
    parseFloat(m.querySelector('[data-testid="stMetricValue"]').innerText) >= at)"""


def test_learn_to_copy_shows_the_induction_head_form(app_url):
    """Learn to copy at full speed on the same server: the best head's score passes 0.5 and the phase change is
    drawn (about 300 steps, seconds), then its starter stops it; screenshots at a projector's 1280x720 before and
    after."""
    with browser_page(height=720, width=1280) as page:
        page.goto(app_url + "/watch_it_learn")
        page.get_by_text("Learn to copy (a GPT, the decoder alone)").click()
        page.get_by_text("No run yet on this server").wait_for()
        settle(page)
        page.screenshot(path=str(ARTIFACTS / "learn_to_copy_before_1280x720.png"))
        page.get_by_text("Full speed").click()
        page.get_by_role("button", name="Start training").click()
        page.wait_for_function(INDUCTION, arg=0.5)                  # the fragment redraws by itself, no click
        page.get_by_text(re.compile(r"^The induction head formed at step \d+")).wait_for()
        step = int(re.search(r"step (\d+)", page.get_by_text(re.compile(r"^The induction head formed")).first
                             .text_content()).group(1))
        page.locator("text", has_text=f"phase change: step {step}").first.wait_for()     # the mark on the figure
        with contextlib.suppress(PlaywrightTimeout):                    # unless it has just ended by itself,
            page.get_by_role("button", name="Stop").click(timeout=5000)  # its starter stops it: a still page
        page.get_by_text(re.compile(r"Started by .* · (stopped|finished)$")).wait_for()
        settle(page)
        assert not page.locator("[data-testid='stException']").count()
        assert page.locator("text", has_text=f"phase change: step {step}").count() == 1
        page.screenshot(path=str(ARTIFACTS / "learn_to_copy_after_1280x720.png"))
        first_map = page.locator(".js-plotly-plot").first.bounding_box()
        assert first_map["y"] + 150 < 720, first_map                  # the map starts on the first screen
