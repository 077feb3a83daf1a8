"""The Lesson page in a real browser, as a class sees it: 1280x720, presenter mode, on the shipped checkpoints (the
lesson starts on the news one) and on the untrained fallback model. Every step is walked with Next: its question
first, then Reveal draws the model's answer (on the untrained model only the steps drawn from the checkpoint: the
others are the same page as on the shipped one); no exception, nothing below the fold; in the shipped walk, ?step=N
opens step N and the handout downloads with every step in it. Screenshots of each step go to
artifacts/lesson/<model>/ (git-ignored).
Skipped like tests/browser/test_browser.py when Playwright or Chromium is missing.
"""
import re

import pytest

from app.lesson.figures import FIGURES
from app.lesson.steps import LESSON, load_lesson
from core.paths import REPO
from tests.browser.chromium import ARTIFACTS, CHROMIUM, serve, settle, sync_api

pytestmark = pytest.mark.slow      # minutes: every step's model answer, twice, in a real browser

SCREEN = {"width": 1280, "height": 720}
WAIT_MS = 600_000      # more than the other browser tests: the first step loads a model while the tiny one trains
# the lowest edge of what the main area shows (a collapsed expander's hidden content is not shown)
BOTTOM = """() => Math.max(...[...document.querySelectorAll(
    '[data-testid="stMain"] :is([data-testid="stElementContainer"], [data-testid="stExpander"])')]
  .filter(e => !e.closest('[data-testid="stExpanderDetails"]')).map(e => e.getBoundingClientRect().bottom))"""
STEPS = load_lesson(LESSON).steps


@pytest.fixture(scope="module", params=["shipped", "untrained"])
def app_url(request, tmp_path_factory):
    """(the app's URL, a name for its screenshots) on the shipped checkpoints, then on none (the untrained model)."""
    shipped = REPO / "checkpoints"
    folder = shipped if request.param == "shipped" else tmp_path_factory.mktemp("checkpoints")
    if request.param == "shipped" and not any(shipped.glob("*/config.json")):
        pytest.skip("no shipped checkpoints here")
    with serve(folder, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url, request.param



def heading(page) -> str:
    return page.locator('[data-testid="stMain"] h3').first.text_content()


def on_screen(page, what: str) -> None:
    bottom = page.evaluate(BOTTOM)
    assert bottom <= SCREEN["height"], f"{what}: the page reaches {bottom:.0f} px, below the 720 px screen"
    assert page.locator('[data-testid="stException"]').count() == 0, what


def test_every_step_fits_a_projector_and_reveals_the_models_answer(app_url):
    url, name = app_url
    folder = ARTIFACTS / "lesson" / name
    folder.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=SCREEN, accept_downloads=True)
            page.set_default_timeout(WAIT_MS)
            page.goto(f"{url}/lesson?step=1")
            settle(page)
            page.get_by_text("Presenter mode", exact=True).click()
            settle(page)
            sidebar = page.locator('[data-testid="stSidebar"]').inner_text()      # the loaded model's card
            assert ("Trained on news" in sidebar) if name == "shipped" else ("No trained checkpoint" in sidebar)
            for n, step in enumerate(STEPS, 1):
                assert heading(page) == f"{n}. {step.title}" and page.url.endswith(f"step={n}")
                if name == "untrained" and not FIGURES[step.figure].uses_checkpoint:
                    # drawn from no checkpoint: the same page as in the shipped walk, checked there
                    if n < len(STEPS):
                        page.get_by_role("button", name="Next").click()
                        settle(page)
                    continue
                assert page.get_by_text(step.question, exact=False).count() >= 1
                main_charts = page.locator('[data-testid="stMain"] .js-plotly-plot, [data-testid="stMain"] .vega-embed')
                before = main_charts.count()
                on_screen(page, f"step {n}, question")
                page.screenshot(path=str(folder / f"step_{n:02d}_question.png"))
                page.get_by_role("button", name="Reveal the model's answer").click()
                settle(page)
                assert page.get_by_role("button", name="Reveal the model's answer").count() == 0
                assert main_charts.count() >= max(before, 1), f"step {n}: no figure after Reveal"
                facts = page.locator('[data-testid="stMain"] :is([data-testid="stAlertContentSuccess"], '
                                     '[data-testid="stAlertContentWarning"])')
                assert facts.count() >= 1 and re.search(r"\d", facts.last.text_content()), f"step {n}"
                if name == "untrained" and step.figure in ("alignment", "figure4", "pronoun", "decoder_alone"):
                    assert "Untrained model" in facts.last.text_content()
                if step.figure == "induction_head":          # tiny-copy's, trained, whatever the class's model
                    fact = facts.last.text_content()
                    assert "Untrained" not in fact and "the token after" in fact, fact
                on_screen(page, f"step {n}, answer")
                page.screenshot(path=str(folder / f"step_{n:02d}_answer.png"))
                if n < len(STEPS):
                    page.get_by_role("button", name="Next").click()
                    settle(page)

            if name == "untrained":    # a shared link and the handout are the same browser work on either model:
                return                 # the shipped walk's (an untrained handout's: tests/app/lesson/test_handout.py)
            page.goto(f"{url}/lesson?step=4")                     # a shared link opens its step
            settle(page)
            assert heading(page) == f"4. {STEPS[3].title}"

            page.locator('[data-testid="stMain"] [data-testid="stPopover"] button').first.click()   # "4 / 9"
            page.get_by_role("button", name="Handout: every question and answer (HTML)").click()
            with page.expect_download() as download:                 # made in a rerun: the popover stays open
                page.get_by_role("button", name="Save lesson_handout.html").click(timeout=180_000)
            path = folder / "handout.html"
            download.value.save_as(path)
            handout = path.read_text(encoding="utf-8")
            assert all(step.title.replace("'", "&#x27;") in handout or step.title in handout for step in STEPS)
            assert handout.count("<img src='data:image/png;base64,") == len(STEPS)
        finally:
            browser.close()
