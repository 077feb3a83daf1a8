"""Screenshots of every page at 1280x720 and at 1920x1080, on the shipped checkpoints, for a human to look at.

They go to artifacts/screenshots/WIDTHxHEIGHT/ (git-ignored; CI keeps them as artifacts): per page the
first screen, as a class sees it on a projector, and the whole page; plus the explorer's head view and
the explorer in presenter mode. The pages are those of the app's own navigation (the folded ones too), so a new page
is photographed too. Fails on a Streamlit exception box or a Vega warning in the browser's console.
Skipped like tests/browser/test_browser.py when Playwright or Chromium is missing.

The README's pictures (docs/images/*.png: the explorer and a paper figure, first screens at 1280x720, palette PNGs
of a few hundred KB at most) are made here too; they go to docs/images/ only when asked:

    ATTN_EXPLORER_DOC_IMAGES=1 python -m pytest -q tests/browser/test_screenshots.py -k doc_images
"""
import io
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest
from PIL import Image

from core.paths import REPO
from tests.browser.chromium import CHROMIUM, WAIT_MS, serve, settle, sync_api

pytestmark = pytest.mark.slow      # minutes: every page of the app in a real browser, at two sizes

SCREENSHOTS = REPO / "artifacts" / "screenshots"
VIEWPORTS = [(1280, 720), (1920, 1080)]
# docs/images/ file: (the page's URL path, px of the page kept above its first chart, scrolled up to it)
DOC_IMAGES = {"explorer.png": ("", 340), "paper_figures.png": ("paper_figures", 130)}
CHART = '[data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"]'
SCROLL_TO = """([chart, above]) => {
  const main = document.querySelector('[data-testid="stMain"]');
  main.scrollTop += chart.getBoundingClientRect().top - above; }"""
DOC_IMAGE_MAX_BYTES = 300_000      # committed files stay in the history for good
MAIN_HEIGHT = """() => Math.max(...['stMain', 'stAppViewContainer', 'stMainBlockContainer']
  .map(id => document.querySelector(`[data-testid="${id}"]`)).filter(Boolean).map(e => e.scrollHeight))"""


@pytest.fixture(scope="module")
def shipped_url(tmp_path_factory):
    """The app on the shipped checkpoints (on an empty folder, so the untrained model, if there are none)."""
    shipped = REPO / "checkpoints"
    folder = shipped if any(shipped.glob("*/config.json")) else tmp_path_factory.mktemp("checkpoints")
    with serve(folder, tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url



def shoot(page, folder, name: str) -> None:
    """The first screen, then the whole page (the window grown to the height of the scrolled main area)."""
    size = page.viewport_size
    page.screenshot(path=str(folder / f"{name}.png"))
    height = min(int(page.evaluate(MAIN_HEIGHT)), 16_000)
    if height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": height})
        settle(page, grace_ms=0)              # a resize starts no run; the charts redraw to the new width
        page.screenshot(path=str(folder / f"{name}_whole.png"))
        page.set_viewport_size(size)


def nav_links(page):
    """The sidebar's page links, every one: Streamlit folds those after the tenth under "View N more"."""
    more = page.locator('[data-testid="stSidebarNavViewButton"]')
    if more.count() and "more" in more.first.inner_text():
        more.first.click()
    return page.locator('[data-testid="stSidebarNav"] a')


def shoot_both_sizes(page, name: str, first: int) -> int:
    """`name` at both VIEWPORTS, starting with VIEWPORTS[first]; returns the index of the size the window is left at
    (the next page starts there: one resize less a page). A resize starts no script run: the page is the same, its
    charts redrawn to the new width, as a visitor at that size gets it."""
    order = VIEWPORTS[first:] + VIEWPORTS[:first]
    for width, height in order:
        if page.viewport_size != {"width": width, "height": height}:
            page.set_viewport_size({"width": width, "height": height})
            settle(page, grace_ms=0)
        folder = SCREENSHOTS / f"{width}x{height}"
        folder.mkdir(parents=True, exist_ok=True)
        shoot(page, folder, name)
    return VIEWPORTS.index(order[-1])


def test_screenshots_of_every_page(shipped_url):
    """One visitor walks the sidebar's pages in turn (every page in its first state: no control is touched until
    the explorer's head view at the end), each photographed at both sizes."""
    console = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            width, height = VIEWPORTS[0]
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(WAIT_MS)
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.goto(shipped_url)
            settle(page)
            paths = [urlparse(h).path.strip("/")
                     for h in nav_links(page).evaluate_all("links => links.map(a => a.href)")]
            assert len(paths) >= 13 and "paper_figures" in paths and "lr_schedule" in paths, paths
            size = 0
            for n, path in enumerate(paths):
                nav_links(page).nth(n).click()
                settle(page)
                assert urlparse(page.url).path.strip("/") == path, (path, page.url)
                assert page.locator('[data-testid="stException"]').count() == 0, path
                size = shoot_both_sizes(page, f"{n + 1:02d}_{path or 'explorer'}", size)

            nav_links(page).first.click()
            settle(page)
            page.get_by_text("Head view (lines)", exact=True).click()
            settle(page)
            size = shoot_both_sizes(page, "explorer_head_view", size)
            page.get_by_text("Presenter mode", exact=True).click()
            settle(page)
            page.get_by_text("One head", exact=True).click()
            settle(page)
            shoot_both_sizes(page, "explorer_presenter", size)
            assert page.locator('[data-testid="stException"]').count() == 0
        finally:
            browser.close()
    vega = [m for m in console if "Conflicting" in m or "WARN" in m and "legend" in m]
    assert not vega, vega


def small_png(png: bytes) -> bytes:
    """A screenshot as a 256-colour palette PNG: the same picture at a fraction of the bytes (UI colours are few)."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def doc_images_folder() -> Path:
    """docs/images/ when ATTN_EXPLORER_DOC_IMAGES=1 asks for new README pictures, else the artifacts folder."""
    if os.environ.get("ATTN_EXPLORER_DOC_IMAGES") == "1":
        return REPO / "docs" / "images"
    return SCREENSHOTS / "docs"


def test_doc_images(shipped_url):
    folder = doc_images_folder()
    folder.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(WAIT_MS)
            for name, (path, above) in DOC_IMAGES.items():
                page.goto(f"{shipped_url}/{path}")
                settle(page)
                assert page.locator('[data-testid="stException"]').count() == 0, path
                chart = page.locator(CHART).first.element_handle()
                page.evaluate(SCROLL_TO, [chart, above])
                page.wait_for_timeout(500)
                png = small_png(page.screenshot())
                assert len(png) <= DOC_IMAGE_MAX_BYTES, f"{name}: {len(png):,} bytes"
                (folder / name).write_bytes(png)
                assert Image.open(folder / name).size == (1280, 720)
        finally:
            browser.close()
