"""How large the offline HTML report of one sentence is (target: <= 6 MB for a 30-word sentence on news-small), how
long it takes to make, and how long Chromium takes to draw it with the network blocked.

    python scripts/bench/bench_report.py [--checkpoint news-small] [--repeat 3]

The report is app.figures.report's, as the explorer's download, app.notebook.report and scripts/export_report.py
make it, of a 32-word news sentence. Drawing: Debian's Chromium through Playwright opens the file (file://, every
other request aborted) until the map's cells are drawn; skipped when Playwright or /usr/bin/chromium is missing.
Prints numbers; asserts nothing.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from app.figures.report import megabytes
from app.notebook import load, report
from scripts import cli

SENTENCE = ("The European Commission said on Tuesday that the new rules for the banks would make it more difficult "
            "for them to lend money to small companies in the south of the country.")
CHROMIUM = "/usr/bin/chromium"


def draw_seconds(path: Path, repeat: int) -> list[float]:
    """Seconds from opening the file to its drawn map, offline, `repeat` times (a fresh page each)."""
    from playwright.sync_api import sync_playwright
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else route.abort())
            started = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("#map .nsewdrag", timeout=120_000)
            times.append(time.perf_counter() - started)
            page.close()
        browser.close()
    return times


def main(argv=None) -> int:
    p = cli.parser(__doc__, summary=True)
    p.add_argument("--checkpoint", default="news-small", help="a folder of checkpoints/ or a checkpoint path")
    p.add_argument("--repeat", type=int, default=3, help="times to make and to draw it")
    args = p.parse_args(argv)
    tm = load(args.checkpoint)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        made = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            page = report(tm, SENTENCE, path=path)
            made.append(time.perf_counter() - started)
        print(f"{args.checkpoint}, {len(SENTENCE.split())} words: {megabytes(len(page.encode('utf-8')))} "
              f"(target <= 6 MB); made in {statistics.median(made):.2f} s (median of {args.repeat})")
        try:
            drawn = draw_seconds(path, args.repeat)
        except ImportError:
            print("Playwright is not installed: no drawing time")
            return 0
        print(f"drawn offline by Chromium in {statistics.median(drawn):.2f} s (median of {args.repeat}; "
              f"{', '.join(f'{t:.2f}' for t in drawn)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
