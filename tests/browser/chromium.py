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
