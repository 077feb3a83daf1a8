"""Sharing what one sees, in a real browser: a link to each page opens the same view (and "Copy link" gives it), the
explorer's whole first map fits a 1280x720 first screen in both modes (and a phone's screen cuts nothing off), and
the offline HTML report draws and switches heads with the network blocked.

On the shipped checkpoints (news-small's snapshots give the Checkpoint page a step to link to). Measured on
2026-12-05, 1280x720, multi30k-small's first sentence: the map from 340 to 710 px (presenter mode: 340 to 715 px),
column words on top; a 32-word news-small report of 5.1 MB drew in 1.6 s offline. Skipped like
tests/browser/test_browser.py when Playwright or Chromium is missing.
"""
import time

import pytest

from app.figures.report import megabytes
from core.checkpoint.snapshots import snapshot_steps
from core.paths import REPO
from tests.browser.chromium import ARTIFACTS, WAIT_MS, serve, settle, sync_api

pytestmark = pytest.mark.slow      # a real server and a real browser, about a minute in all

SHIPPED = REPO / "checkpoints"
# the first map's parts, in px from the window's top: the chart, its cells, its words and its colour bar
MAP_PARTS = """() => {
  const plot = document.querySelector('[data-testid="stMain"] .js-plotly-plot');
  const box = e => e.getBoundingClientRect();
  const parts = [...plot.querySelectorAll('.xtick text, .ytick text, .colorbar, .gtitle')].map(box);
  return {chart_top: box(plot).top, chart_bottom: box(plot).bottom, cells_top: box(plot.querySelector('.nsewdrag')).top,
          cells_bottom: box(plot.querySelector('.nsewdrag')).bottom, words_top: Math.min(...parts.map(b => b.top)),
          parts_bottom: Math.max(...parts.map(b => b.bottom)), parts_right: Math.max(...parts.map(b => b.right))};
}"""
# anything of the page wider than the window (a phone's): a control or figure that runs off the screen
TOO_WIDE = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.textContent.slice(0, 40))"""


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    if not (SHIPPED / "news-small" / "config.json").exists():
        pytest.skip("the shipped checkpoints are not here")
    with serve(SHIPPED, tmp_path_factory.mktemp("server") / "streamlit.log") as address:
        yield address


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        yield chromium
        chromium.close()


def fresh_page(browser, width=1280, height=720):
    """A page in a fresh context: a new visitor, with no session of their own yet."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(WAIT_MS)
    return page



def opened(page, address: str, notices: tuple[str, ...] = ()):
    """The page at `address`, drawn, with no exception; its notices (toasts) waited for as it draws: read after it
    settles, a loaded machine may already have hidden them."""
    page.goto(address)
    for notice in notices:
        page.locator('[data-testid="stToast"]', has_text=notice).first.wait_for()
    settle(page)
    assert page.locator('[data-testid="stException"]').count() == 0, address
    return page


def map_title(page) -> str:
    return page.locator('[data-testid="stMain"] .js-plotly-plot text.gtitle').first.text_content()


def test_a_link_to_each_page_opens_the_same_view(url, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    step = snapshot_steps(SHIPPED / "news-small")[2][0]
    links = {  # page: (query, what shows that the link was read)
        "": ("checkpoint=news-small&text=The+cat+sat+on+the+mat.&kind=cross&layer=2&head=3",
             lambda p: map_title(p) == "Encoder-decoder attention, layer 2 of 3, head 3 of 8"),
        "heads": ("checkpoint=news-small&tab=entropy",
                  lambda p: p.get_by_role("tab", name="Entropy").get_attribute("aria-selected") == "true"),
        "qk": ("checkpoint=news-small&layer=2&head=5", lambda p: "layer 2 of 6, head 5 of 8" in map_title(p)),
        "alignment": ("checkpoint=news-small&layer=2&head=3&shift=read",
                      lambda p: map_title(p).startswith("layer 2, head 3, shift 'read'")),
        "pronouns": ("checkpoint=news-small&sentence=3", lambda p: "sentence=3" in p.url),
        "checkpoint": (f"checkpoint=news-small&step={step}&layer=5&head=4",
                       lambda p: p.get_by_text(f"Step {step:,}: encoder self-attention, layer 5, head 4").count() > 0),
        "paper_figures": ("checkpoint=news-small&figure=4&heads4=5,6",
                          lambda p: p.get_by_role("tab", name="Figure 4: anaphora").get_attribute("aria-selected")
                          == "true"),
    }
    page = fresh_page(browser)
    for path, (query, shows) in links.items():
        opened(page, f"{url}/{path}?{query}")
        assert shows(page), (path, page.url)
        for param in query.split("&"):                   # the page kept every value of the link in its URL
            assert param.replace(",", "%2C") in page.url or param in page.url, (path, param, page.url)
    page.screenshot(path=str(ARTIFACTS / "share_paper_figures_link.png"))

    # a control changed: the URL follows; "Copy link" gives it; a new visitor opening it sees the same map
    opened(page, f"{url}/?{links[''][0]}")
    page.get_by_role("button", name="Copy link").click()
    shared = page.locator('[data-testid="stPopoverBody"] code').first.text_content().strip()
    assert "head=3" in shared and "kind=cross" in shared and shared.startswith(url)
    page.screenshot(path=str(ARTIFACTS / "share_copy_link.png"))
    page.keyboard.press("Escape")
    visitor = fresh_page(browser)
    assert map_title(opened(visitor, shared)) == map_title(page)

    # the controls keep their values across a visit to another page
    page.get_by_role("link", name="Checkpoint").click()
    settle(page)
    page.get_by_role("link", name="Attention explorer").click()
    settle(page)
    assert map_title(page) == "Encoder-decoder attention, layer 2 of 3, head 3 of 8" and "head=3" in page.url

    # an odd link opens the nearest sensible view, with a notice
    opened(visitor, f"{url}/?checkpoint=no-such-model&layer=99&head=x",
           notices=("no checkpoint named 'no-such-model'", "There is no layer 99"))
    assert "layer 6 of 6, head 1 of 8" in map_title(visitor)
    visitor.screenshot(path=str(ARTIFACTS / "share_odd_link.png"))


def test_the_whole_first_map_is_on_the_first_screen_in_both_modes(url, browser):
    """At 1280x720 the explorer's map, its words (on top) and colour bar included, ends within the screen, presenter
    mode too; on a 390x844 phone the page scrolls but nothing runs off its side."""
    page = fresh_page(browser)
    opened(page, url + "/")
    seen = {}
    for mode in ("normal", "presenter"):
        if mode == "presenter":
            page.get_by_text("Presenter mode", exact=True).click()
            settle(page)
        seen[mode] = parts = page.evaluate(MAP_PARTS)
        page.screenshot(path=str(ARTIFACTS / f"share_first_screen_{mode}.png"))
        print(mode, {k: round(v) for k, v in parts.items()})
        assert parts["words_top"] >= parts["chart_top"] - 1 and parts["chart_bottom"] <= 720, (mode, parts)
        assert parts["parts_bottom"] <= 720 and parts["cells_bottom"] <= 720, (mode, parts)
    assert seen["presenter"]["cells_top"] > seen["presenter"]["chart_top"] + 60     # room for the words above
    phone = fresh_page(browser, 390, 844)
    opened(phone, url + "/")
    assert phone.evaluate(TOO_WIDE) == []
    phone.screenshot(path=str(ARTIFACTS / "share_phone.png"), full_page=True)


def test_the_offline_report_draws_and_switches_heads_with_the_network_blocked(browser, tmp_path):
    from app.notebook import load, report
    if not (SHIPPED / "news-small" / "config.json").exists():
        pytest.skip("the shipped checkpoints are not here")
    sentence = ("The European Commission said on Tuesday that the new rules for the banks would make it more "
                "difficult for them to lend money to small companies in the south of the country.")   # 32 words
    path = tmp_path / "report.html"
    size = len(report(load("news-small"), sentence, path=path).encode("utf-8"))
    assert size <= 6_000_000, megabytes(size)
    page = fresh_page(browser, 1280, 900)
    asked = []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else (asked.append(route.request.url), route.abort()))
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    started = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("#map .nsewdrag")
    print(f"report: {megabytes(size)}, drawn in {time.perf_counter() - started:.1f} s offline")
    assert not errors and not asked, (errors, asked)
    title = page.locator("#map text.gtitle")
    assert title.text_content() == "Encoder self-attention, layer 1 of 6, head 1 of 8"
    first = page.evaluate("() => document.getElementById('map').data[0].z[0].slice()")
    page.select_option("#head", "3")
    page.wait_for_function("() => document.querySelector('#map text.gtitle').textContent.includes('head 4 of 8')")
    assert page.evaluate("() => document.getElementById('map').data[0].z[0]") != first     # another head's weights
    page.select_option("#kind", "cross")
    page.wait_for_function("() => document.querySelector('#map text.gtitle').textContent.startsWith('Encoder-decoder')")
    assert title.text_content() == "Encoder-decoder attention, layer 1 of 3, head 4 of 8"
    page.screenshot(path=str(ARTIFACTS / "share_offline_report.png"))
