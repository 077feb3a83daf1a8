"""The browser tests' shared set-up: Debian's Chromium driven by Playwright, and `streamlit run app/main.py`
served on a free port. Importing this module skips the importing test file when Playwright or /usr/bin/chromium
is missing; it never downloads a browser."""
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from core.paths import REPO
from tests.helpers import FIXTURES

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt install chromium); this test never downloads a browser",
                allow_module_level=True)

ARTIFACTS = REPO / "artifacts"
WAIT_MS = 180_000                      # generous: the machine's cores are shared with training runs
# the script has run to its end (Streamlit marks the app's root for its own browser tests) and nothing still loads
SETTLED = """() => !!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')
    && !document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"]')"""
# Counts the script's runs and stamps the page's last change, so that settle() waits for what happened, not a fixed
# time: installed once per document (a page that navigates gets it again on its next settle)
WATCH = """() => { if (window.__settle) return;
  const w = window.__settle = {runs: 0, seen: 0, changed: performance.now()};
  const root = () => document.querySelector('[data-testid="stApp"]');
  if (!root() || ['running', 'initial'].includes(root().dataset.testScriptState)) w.runs = 1;
  new MutationObserver(records => { w.changed = performance.now();
    if (records.some(r => r.attributeName === 'data-test-script-state'
                          && r.target.dataset.testScriptState === 'running')) w.runs += 1; })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true}); }"""
RAN = "() => !window.__settle || window.__settle.runs > window.__settle.seen"      # none: the page navigated
QUIET = f"""(quiet) => ({SETTLED})() && (!window.__settle || performance.now() - window.__settle.changed >= quiet)"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shared_fixture(folder: Path) -> Path:
    """A stand-in for ../shared (never the real data): the tiny hand-written UD fixture as the EWT dev file."""
    ud = folder / "eval" / "ud-english-ewt"
    ud.mkdir(parents=True, exist_ok=True)
    (ud / "en_ewt-ud-dev.conllu").write_bytes((FIXTURES / "syntax" / "mini.conllu").read_bytes())
    return folder


@contextlib.contextmanager
def serve(checkpoints: Path, log: Path):
    """`streamlit run app/main.py` on a free port with its checkpoints from `checkpoints`; yields the URL."""
    port = free_port()
    env = {**os.environ, "ATTN_EXPLORER_CHECKPOINTS": str(checkpoints),
           "ATTN_EXPLORER_ALIGNMENT_GOLD": str(FIXTURES / "alignment_gold"),
           "ATTN_EXPLORER_SHARED": str(shared_fixture(log.parent / "shared"))}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("the Streamlit server did not start:\n" + log.read_text(errors="replace")[-3000:])
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def settle(page, grace_ms: int = 1500, quiet_ms: int = 400, cap_ms: int = 8000) -> None:
    """Wait until the page's script has run and its charts have drawn: a run that started since the last settle (a
    click's rerun, or a new page's first run), waited for up to grace_ms, then the script done and the page unchanged
    for quiet_ms (Plotly and Vega draw after the script); after cap_ms of changes, the script done is enough.

    Two fixed pauses did this before (the script done, 1-1.5 s, done again, 1-1.5 s): 2-3 s a call whatever
    happened, and blind to a rerun that began after the pause."""
    page.evaluate(WATCH)
    try:
        if grace_ms > 0:                                # (Playwright reads a timeout of 0 as none)
            page.wait_for_function(RAN, timeout=grace_ms, polling=50)
    except sync_api.TimeoutError:
        pass                                            # the last action started no run (a client-side click)
    page.wait_for_function(SETTLED)
    try:
        page.wait_for_function(QUIET, arg=quiet_ms, timeout=cap_ms, polling=100)
    except sync_api.TimeoutError:
        page.wait_for_function(SETTLED)                 # still changing (an animation): the script's end will do
    page.evaluate("() => { if (window.__settle) window.__settle.seen = window.__settle.runs; }")


@contextlib.contextmanager
def browser_page(height: int = 2200, width: int = 1400):
    """A page of a window (tall, unless told) in Debian's Chromium, with the generous timeout; closed afterwards."""
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()
