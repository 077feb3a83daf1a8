"""A class in real browsers: a teacher (1280x720, the projector) and three students in separate browser contexts (two
at 1280x720, one on a phone's 390x844) run the Lesson as a class on a real `streamlit run` server. The students join
by the link, by the QR code read off the projector (zxing-cpp, as a phone's camera) and by typing the code, follow
the teacher's step, answer, see the class beside the model after the reveal; the teacher downloads the CSV. Then the
server is killed (SIGKILL) and started again on the same database: the teacher's private link and the students' open
tabs come back at the class's step with every accepted answer; then the class taps a token of "A head that copies"
and the teacher sees the taps beside tiny-copy's induction head.

Screenshots for a human to look at go to artifacts/class/ (git-ignored). Skipped like the other browser tests when
Playwright or Chromium is missing.
"""
import csv
import io
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from PIL import Image

from app.lesson.steps import LESSON, load_lesson
from core.paths import REPO
from tests.browser.chromium import ARTIFACTS, SETTLED, WAIT_MS, free_port, shared_fixture, sync_api

zxingcpp = pytest.importorskip("zxingcpp", reason="zxing-cpp is not installed (requirements-dev.txt)")
pytestmark = pytest.mark.slow      # a real server killed and restarted, four browsers: about a minute
STEPS = load_lesson(LESSON).steps
COPY_STEP = next(n for n, s in enumerate(STEPS, 1) if s.figure == "induction_head")

class Server:
    """`streamlit run app/main.py` on one port and one class database, that can be killed and started again."""

    def __init__(self, folder):
        self.port, self.folder, self.proc = free_port(), folder, None
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "ATTN_EXPLORER_CHECKPOINTS": str(REPO / "checkpoints"),
                    "ATTN_EXPLORER_CLASS_DB": str(folder / "classes.sqlite3"),
                    "ATTN_EXPLORER_SHARED": str(shared_fixture(folder / "shared"))}

    def start(self):
        with open(self.folder / "streamlit.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.port", str(self.port),
                 "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats",
                 "false"], cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(self.url + "/_stcore/health", timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    pytest.fail("the server did not start:\n" + (self.folder / "streamlit.log").read_text()[-3000:])
                time.sleep(0.3)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def server(tmp_path):
    if not (REPO / "checkpoints" / "news-small" / "config.json").exists():
        pytest.skip("the shipped checkpoints are not here")
    s = Server(tmp_path)
    s.start()
    yield s
    s.stop()


def settle(page):
    page.wait_for_function(SETTLED, timeout=WAIT_MS)


def back_at_the_lesson(student):
    """A student brought back from a pushed view follows within 20 s; seen to stall now and then on two loaded cores
    (not yet understood), when reloading the tab, as a student would, must bring them back to the class's step."""
    try:
        student.get_by_text("3. Why divide by").wait_for(timeout=20_000)
    except sync_api.TimeoutError:
        print(f"a student was not back after 20 s ({student.url}); reloading the tab")
        student.reload()
        student.get_by_text("3. Why divide by").wait_for(timeout=30_000)


def in_class(student, code, who, server):
    """Waits for a student to be in the class; a failure says which student, what their sidebar said, and the
    server's log, and keeps a screenshot."""
    try:
        student.get_by_text(f"You are in class {code}").first.wait_for(state="attached", timeout=60_000)
    except sync_api.TimeoutError:
        shot(student, "not_in_class")
        bar = student.get_by_test_id("stSidebar").inner_text() if student.get_by_test_id("stSidebar").count() else ""
        log = (server.folder / "streamlit.log").read_text()[-3000:]
        pytest.fail(f"{who} was not in class {code} after 60 s; address {student.url}; sidebar:\n{bar}\n"
                    f"server log:\n{log}")


def tab(browser, width=1280, height=720):
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=width < 500,
                                  has_touch=width < 500)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def shot(page, name):
    folder = ARTIFACTS / "class"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def answer(page, option):
    page.locator('[data-testid="stButtonGroup"] button', has_text=option).first.click()
    page.get_by_text(f"Sent: {option}").wait_for()


def test_a_teacher_and_three_students_run_a_class_through_a_server_kill(server):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        teacher = tab(browser)
        teacher.goto(f"{server.url}/lesson?step=2")
        settle(teacher)
        sidebar = teacher.get_by_test_id("stSidebar")
        sidebar.get_by_text("Class", exact=True).click()
        sidebar.get_by_role("button", name="Start a class").click()
        dialog = teacher.get_by_role("dialog")
        dialog.get_by_test_id("stCode").wait_for()
        dialog.locator("img").first.wait_for()                                  # the dialog has drawn
        code = re.search(r"\b([A-Z2-9]{6})\b", dialog.inner_text()).group(1)
        link = dialog.get_by_test_id("stCode").inner_text().strip()
        assert link.endswith(f"/lesson?class={code}") and "teach" not in link
        qr = dialog.locator("img").first
        assert qr.bounding_box()["width"] >= 300                                # a QR code for the back row
        shot(teacher, "teacher_join_1280x720")
        scanned = [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(qr.screenshot())))]
        assert scanned == [link]                                                # what a phone's camera reads
        teacher.keyboard.press("Escape")
        sidebar.get_by_role("button", name="Your teacher link (private)").click()
        control = teacher.get_by_test_id("stPopoverBody").get_by_test_id("stCode").inner_text().strip()
        assert "teach=" in control and len(control.split("teach=")[1]) >= 32
        teacher.keyboard.press("Escape")

        students = [tab(browser), tab(browser), tab(browser, 390, 844)]
        students[0].goto(link)                                                 # the link
        students[1].goto(server.url + "/lesson")                               # types the code (below)
        students[2].goto(scanned[0])                                           # the phone scanned the QR code
        for s in students:
            settle(s)
        typed = students[1]                                               # one types the code in the sidebar
        bar = typed.get_by_test_id("stSidebar")
        bar.get_by_text("Class", exact=True).click()
        bar.get_by_label("Class code").fill(code.lower())
        bar.get_by_label("Class code").press("Enter")    # a click on Join can miss: the sidebar scrolls back after fill
        for i, s in enumerate(students):
            in_class(s, code, f"student {i} ({['link', 'typed the code', 'phone, QR code'][i]})", server)
            s.get_by_text("2. Attention is a weighted average").wait_for()      # the teacher's step
            assert control.split("teach=")[1] not in s.content()              # the secret never reaches them

        t0 = time.perf_counter()
        teacher.get_by_role("button", name="Next").click()
        for s in students:
            s.get_by_text("3. Why divide by").wait_for(timeout=10_000)
        followed = time.perf_counter() - t0
        for s, option in zip(students, ["Sharper", "Sharper", "Nothing changes"]):
            answer(s, option)
        teacher.get_by_text("3 of 3 answered").wait_for(timeout=10_000)
        shot(students[2], "student_phone_390x844")
        teacher.get_by_role("button", name="Reveal the model's answer").click()
        settle(teacher)
        teacher.get_by_role("tab", name="The class and the model").wait_for()
        shot(teacher, "teacher_reveal_1280x720")
        for s in students:
            s.get_by_text("Answers are closed").wait_for(timeout=10_000)
        shot(students[2], "student_phone_reveal_390x844")

        with teacher.expect_download() as download:
            sidebar.get_by_role("button", name="Answers (CSV)").click()
        rows = list(csv.DictReader(io.StringIO(open(download.value.path(), encoding="utf-8").read())))
        assert sorted(r["answer"] for r in rows) == ["Nothing changes", "Sharper: one key gets almost all",
                                                     "Sharper: one key gets almost all"]
        assert {r["step"] for r in rows} == {"3"}

        sidebar.get_by_role("link", name="Attention explorer").click()    # "Show this to the class"
        settle(teacher)
        sidebar.get_by_role("button", name="Show this to the class").click()
        for s in students:
            s.get_by_text("3. Why divide by").wait_for(state="detached", timeout=10_000)
            assert "class=" in s.url and "seat=" in s.url
        sidebar.get_by_role("button", name="Bring the class back to the lesson").click()
        for s in students:
            back_at_the_lesson(s)

        server.kill()                                                     # SIGKILL mid-class
        server.start()
        again = tab(browser)
        again.goto(control)
        settle(again)
        again.get_by_text(f"Class {code}: 3 joined").wait_for()
        again.get_by_text("3. Why divide by").wait_for()
        assert "teach" not in again.url
        for s in students:                                                # the open tabs reconnect by themselves
            s.get_by_text("Answers are closed. Yours:").wait_for(timeout=60_000)
            s.get_by_text("3. Why divide by").wait_for()

        copies = f"{COPY_STEP}. {STEPS[COPY_STEP - 1].title}"            # a word-tap poll: tiny-copy's tokens
        again.locator('[data-testid="stMain"] [data-testid="stPopover"] button').first.click()
        again.get_by_role("button", name=copies).click()
        settle(again)
        for s in students:
            s.get_by_text(copies).wait_for(timeout=20_000)
        for s, token in zip(students, ["X", "X", "B"]):
            answer(s, token)
        again.get_by_text("3 of 3 answered").wait_for(timeout=10_000)
        again.get_by_role("button", name="Reveal the model's answer").click()
        settle(again)
        again.get_by_role("tab", name="The class and the model").wait_for()
        shot(again, "teacher_reveal_copy_head_1280x720")
        # the class's taps beside the induction head; until the reveal's rerun has replaced them, the live bars
        # (the same taps, unlabelled) may still be the first chart
        beside = again.locator('[data-testid="stMain"] .js-plotly-plot', has_text="layer 2, head 1")
        beside.first.wait_for(timeout=30_000)
        for s in students:
            s.get_by_text("Answers are closed. Yours:").wait_for(timeout=10_000)
        browser.close()
    # how fast is measured by scripts/bench/bench_class_live.py, idle, in many runs: a clock here swung past 3 s
    # when the other browser tests ran beside it
    print(f"the students followed the teacher in {followed:.1f} s")
