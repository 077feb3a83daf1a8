"""Does a download made on the click reach the browser while other sessions run? Streamlit's own deferred download
(st.download_button with a callable) against app.file_button's two clicks.

    python scripts/bench/bench_download_race.py [--tries 10] [--followers 3] [--tick 0.05] [--busy 2]

A tiny Streamlit app (written to a temporary folder) offers both, each a 200 kB file made in 0.5 s. --followers browser
tabs follow as a class's students do (a fragment rerun every --tick seconds); --busy processes spin on the CPU as a
busy classroom server's sessions do. Another tab clicks each download --tries times; a try counts when the browser
saves the whole file. Needs Playwright and Debian's /usr/bin/chromium. Prints counts; asserts nothing.
"""
from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.bench.bench_class import wait_healthy
from scripts.served import free_ports

SIZE = 200_000
APP = f'''
import time
import streamlit as st
from app.file_button import file_button

def make():
    time.sleep(0.5)
    return b"x" * {SIZE}

if st.query_params.get("follow"):
    @st.fragment(run_every=float(st.query_params["follow"]))
    def tick():
        st.write(time.time())
    tick()
else:
    st.download_button("Deferred", data=make, file_name="deferred.bin", on_click="ignore", key="deferred")
    file_button("Two clicks", make, "two.bin", "application/octet-stream", key="two")
'''


def spin() -> None:
    while True:
        pass


def whole(page, click) -> bool:
    """Whether the download that click() starts arrives complete."""
    try:
        with page.expect_download(timeout=15_000) as d:
            click()
        return d.value.failure() is None and Path(d.value.path()).stat().st_size == SIZE
    except Exception:                                   # noqa: BLE001 - a timeout or a failed download: not whole
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tries", type=int, default=10)
    p.add_argument("--followers", type=int, default=3, help="tabs rerunning a fragment meanwhile")
    p.add_argument("--tick", type=float, default=0.05, help="the follower's fragment period, seconds")
    p.add_argument("--busy", type=int, default=2, help="processes spinning on the CPU meanwhile")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp())
    (folder / "race_app.py").write_text(APP)
    port = free_ports(1)
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(folder / "race_app.py"),
                               "--server.port", str(port), "--server.headless", "true"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        for s in spinners:
            s.start()
        counts = {"deferred": 0, "two clicks": 0}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            for _ in range(args.followers):
                browser.new_page().goto(f"{url}/?follow={args.tick}")
            page = browser.new_page(accept_downloads=True)
            page.goto(url)
            for _ in range(args.tries):
                page.get_by_role("button", name="Deferred").wait_for()
                counts["deferred"] += whole(page, lambda: page.get_by_role("button", name="Deferred").click())
                page.get_by_role("button", name="Two clicks").click()
                counts["two clicks"] += whole(page, lambda: page.get_by_role("button", name="Save two.bin").click())
                page.reload()
            browser.close()
        print(f"{args.followers} followers' fragments every {args.tick} s, {args.busy} busy processes, "
              f"{args.tries} tries each: "
              + ", ".join(f"{k} {v}/{args.tries} whole" for k, v in counts.items()))
    finally:
        for s in spinners:
            s.terminate()
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
