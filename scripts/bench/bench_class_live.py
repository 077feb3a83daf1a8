"""A class in session on one server: N students follow the teacher's Lesson, answer, and other visitors switch heads.

    python scripts/bench/bench_class_live.py                    # 60 students, 8 explorer visitors, its own server
    python scripts/bench/bench_class_live.py --students 20 --seconds 20

Uses scripts/bench/bench_class.py's light websocket client (one per student: Streamlit's own protocol, the widget
states a browser keeps, a fragment redrawn at the interval the server asks, as the browser's auto_rerun does) and
the app's run log (ATTN_EXPLORER_RUN_LOG: each full run, and each run of the class's fragments). It starts
`streamlit run app/main.py` on a fresh class database, creates the class in that database, opens the teacher's
page with the teacher's link and every student's with the join link, then measures:

  explorer: visitors switching heads at random (bench_class's "random" phase), once with the class idle (its
            students' tabs open but not polling) and once with every student polling, alternated `--rounds` times;
            the script run p50/p95 of each, side by side.
  follow:   the teacher moves to the next step (the store write the Next button makes) every --gap-steps seconds;
            the time until each student's page shows that step (its full rerun finished).
  answer:   at a choice step every student taps an option at a random moment; the time from the answer's commit
            (its run finished) to the teacher's live bars counting it.
  fragment: the server run of the students' polling fragment (p50/p95), as the app logs it.
  rerun:    the server run of each page's full rerun on the teacher's later step changes (no answers then): what
            one follower's page costs the server when the teacher moves.

The last line sums it up with the load average. Figures go to docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import tempfile
import time
from pathlib import Path

from app.lesson.class_panel import FOLLOW_LOG, LIVE_LOG
from app.lesson.class_store import ClassStore
from app.lesson.steps import load_lesson
from scripts.bench.bench_class import (Run, ServerWatch, Session, logged_runs, pct, start_server, switch_and_run,
                                       wait_healthy)

ANSWERED = re.compile(r"\*\*(\d+) of (\d+)\*\* answered")
STEP = re.compile(r"^(\d+)\. ")


class ClassSession(Session):
    """A light client that opens a page with a query string (the join or teacher link) and keeps what a class needs:
    the headings it was sent, and every fragment that asked to be rerun (a page may have several)."""

    def __init__(self, url: str, page: str, query: str):
        super().__init__(url, page)
        self.query, self.fragments, self.step = query, {}, None
        self.to_answer: tuple | None = None          # (step, option, not before this time): an answer to give
        self.committed: float | None = None          # when that answer's run finished (it was stored by then)

    def back_msg(self, fragment_id=None):
        msg = super().back_msg(fragment_id)
        msg.rerun_script.query_string = self.query
        return msg

    def _handle(self, fwd, run: Run, drawn: set) -> bool:
        kind = fwd.WhichOneof("type")
        if kind == "auto_rerun":
            self.fragments[fwd.auto_rerun.fragment_id] = fwd.auto_rerun.interval
        elif kind == "page_info_changed":
            self.query = fwd.page_info_changed.query_string          # the page rewrote its address
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            if el.WhichOneof("type") == "heading" and (m := STEP.match(el.heading.body)):
                self.step = int(m.group(1))
            elif el.WhichOneof("type") == "markdown":
                run.texts.append(el.markdown.body)
        return super()._handle(fwd, run, drawn)

    def choose(self, option: str) -> None:
        """Tap an option of the page's pills (the browser's widget state for it)."""
        for wid, (kind, _proto) in self.elements.items():
            if kind == "button_group" and wid in self.states:
                self.states[wid].string_array_value.data[:] = [option]
                return
        raise LookupError("no options to tap on the page")


async def poll(s: ClassSession, stop: asyncio.Event, seen: dict, timeout: float) -> None:
    """A student's tab: its polling fragment redrawn at the interval the server asked; when the teacher moved, the
    fragment's rerun of the whole page shows the new step (its time noted in seen[step])."""
    while not stop.is_set():
        fragment, interval = next(iter(s.fragments.items()), (None, 1.5))
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            pass
        if fragment and not stop.is_set():
            before = s.step
            await s.run("poll", timeout, fragment_id=fragment)
            if s.step != before:
                seen.setdefault(s.step, []).append(time.time())
        if s.to_answer and s.step == s.to_answer[0] and time.time() >= s.to_answer[2]:
            s.choose(s.to_answer[1])                 # one run at a time on a tab: the answer between two polls
            s.to_answer = None
            if not (await s.run("answer", timeout)).errors:
                s.committed = time.time()


async def open_all(sessions, timeout: float, batch: int = 10) -> list[Run]:
    runs = []
    for i in range(0, len(sessions), batch):
        group = sessions[i: i + batch]
        await asyncio.gather(*(s.open() for s in group))
        runs += await asyncio.gather(*(s.run("open", timeout) for s in group))
    return runs


async def explorer_phase(visitors, seconds: float, gap: float, rng, timeout: float) -> None:
    end = time.perf_counter() + seconds

    async def visitor(s, r):
        while True:
            await asyncio.sleep(r.expovariate(1 / gap))
            if time.perf_counter() > end:
                return
            await switch_and_run(s, "explorer", r, timeout)
    await asyncio.gather(*(visitor(s, random.Random(rng.random())) for s in visitors))


async def teacher_loop(teacher: ClassSession, stop: asyncio.Event, counts: list, timeout: float) -> None:
    """The teacher's tab: every fragment of the page (the follow loop, the live bars) redrawn at its interval; each
    redraw's "k of n answered" noted with its time."""
    last = {}
    while not stop.is_set():
        await asyncio.sleep(0.1)
        for fragment, interval in list(teacher.fragments.items()):
            if time.time() - last.get(fragment, 0) >= interval:
                last[fragment] = time.time()
                run = await teacher.run("teacher", timeout, fragment_id=fragment)
                for text in run.texts:
                    if m := ANSWERED.search(text):
                        counts.append((time.time(), int(m.group(1))))
                if os.environ.get("BENCH_DEBUG"):
                    print("teacher", fragment[:8], teacher.step, run.errors, [t[:40] for t in run.texts][:6])


async def bench(args, pid) -> None:
    rng = random.Random(args.seed)
    store = ClassStore(args.db)
    lesson = load_lesson()
    choice_step = next(i for i, s in enumerate(lesson.steps, 1) if s.poll.kind == "choice")
    code, secret = store.create_class(lesson.title, len(lesson.steps), choice_step - 1)
    t = time.perf_counter()
    warm = ClassSession(args.url, "lesson", f"step={choice_step}")          # fills the lesson's caches
    await warm.open()
    await warm.run("warm", args.run_timeout)
    teacher = ClassSession(args.url, "lesson", f"teach={secret}")
    await teacher.open()
    await teacher.run("teacher", args.run_timeout)
    students = [ClassSession(args.url, "lesson", f"class={code}") for _ in range(args.students)]
    visitors = [Session(args.url) for _ in range(args.visitors)]
    opened = await open_all(students + visitors, args.run_timeout)
    errors = [e for r in opened for e in r.errors]
    print(f"{args.students} students and {args.visitors} visitors opened in {time.perf_counter() - t:.0f} s, "
          f"{len(errors)} errors" + (f" ({errors[0]})" if errors else ""))
    assert all(s.fragments for s in students), "a student's page did not start its follow loop"

    # explorer head switches with the class idle and with the class polling, alternated
    side = {"idle": [], "polling": []}
    seen: dict = {}
    for _ in range(args.rounds):
        for mode in ("idle", "polling"):
            stop = asyncio.Event()
            tasks = [asyncio.create_task(poll(s, stop, seen, args.run_timeout)) for s in students] \
                if mode == "polling" else []
            since = time.time()
            await explorer_phase(visitors, args.seconds, args.gap, rng, args.run_timeout)
            side[mode] += logged_runs(args.run_log, since, time.time(), page="")
            stop.set()
            await asyncio.gather(*tasks)

    # the teacher moves step by step; at the choice step every student answers; the teacher's bars count them
    stop, counts, follow, windows = asyncio.Event(), [], [], []
    fragment_since = time.time()
    tasks = [asyncio.create_task(poll(s, stop, seen, args.run_timeout)) for s in students]
    tasks.append(asyncio.create_task(teacher_loop(teacher, stop, counts, args.run_timeout)))

    async with ServerWatch(pid, args.run_log) as watch:
        for n, step in enumerate(range(choice_step, choice_step + args.steps)):
            seen.pop(step, None)
            t0 = time.time()
            store.set_step(secret, step)
            if n == 0:
                for s in students:
                    s.to_answer = (step, rng.choice(lesson.steps[step - 1].poll.choices), t0 + rng.uniform(0, 5))
            await asyncio.sleep(args.gap_steps)
            if n:                                     # no answers are given then: each run is a page following
                windows.append((t0, time.time()))
            follow += [x - t0 for x in seen.get(step, [])]
            missing = args.students - len(seen.get(step, []))
            if missing:
                print(f"  step {step}: {missing} students had not followed within {args.gap_steps:.0f} s")
    stop.set()
    await asyncio.gather(*tasks)
    commits = [s.committed for s in students if s.committed]
    fragment = [x * 1000 for x in logged_runs(args.run_log, fragment_since, time.time(), page=FOLLOW_LOG)]
    live = [x * 1000 for x in logged_runs(args.run_log, fragment_since, time.time(), page=LIVE_LOG)]
    rerun = [x * 1000 for since, until in windows for x in logged_runs(args.run_log, since, until, page="lesson")]
    reach = []
    for k, committed in enumerate(sorted(commits), 1):
        shown = next((t for t, c in counts if c >= k and t >= committed), None)
        if shown is not None:
            reach.append(shown - committed)
    await asyncio.gather(*(s.close() for s in [warm, teacher, *students, *visitors]), return_exceptions=True)

    def line(xs, unit="ms", scale=1.0):
        xs = [x * scale for x in xs]
        return f"p50 {pct(xs, 50):.0f} p95 {pct(xs, 95):.0f} max {max(xs):.0f} {unit} ({len(xs)})" if xs else "none"
    idle, polling = side["idle"], side["polling"]
    slower = pct(polling, 95) / pct(idle, 95) - 1 if idle and polling else float("nan")
    print(f"explorer head switch, class idle:    {line(idle, scale=1000)}")
    print(f"explorer head switch, class polling: {line(polling, scale=1000)}   p95 {slower:+.0%}")
    print(f"step change to every student:        {line(follow, scale=1000)}   (target p95 <= 3000 ms)")
    print(f"answer to the teacher's bars:        {line(reach, scale=1000)}   (target p95 <= 3000 ms; "
          f"{len(commits)} answers committed)")
    print(f"polling fragment, server run:        {line(fragment)}   (target p95 <= 30 ms)")
    print(f"teacher's live bars, server run:     {line(live)}")
    print(f"step change, each page's full rerun: {line(rerun)}   (the students' and the teacher's)")
    cpu = f"server CPU {watch.cpu:.0f} s in the step phase" if watch.cpu is not None else ""
    print(f"SUMMARY {args.students} students: follow p95 {pct(follow, 95) * 1000 if follow else float('nan'):.0f} ms"
          f" | answer p95 {pct(reach, 95) * 1000 if reach else float('nan'):.0f} ms | fragment p95 "
          f"{pct(fragment, 95) if fragment else float('nan'):.1f} ms | explorer p95 {slower:+.0%} with polling | "
          f"rerun p50 {pct(rerun, 50) if rerun else float('nan'):.0f} ms | {cpu} | load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=60)
    ap.add_argument("--visitors", type=int, default=8, help="other visitors switching heads on the explorer")
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each explorer phase")
    ap.add_argument("--rounds", type=int, default=2, help="explorer phases idle/polling, alternated")
    ap.add_argument("--gap", type=float, default=3.0, help="mean seconds between one visitor's head switches")
    ap.add_argument("--steps", type=int, default=4, help="step changes by the teacher")
    ap.add_argument("--gap-steps", type=float, default=10.0, help="seconds between the teacher's step changes")
    ap.add_argument("--port", type=int, default=8598)
    ap.add_argument("--run-timeout", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_class_live_"))
    args.db, args.run_log = str(folder / "classes.sqlite3"), str(folder / "runs.jsonl")
    os.environ["ATTN_EXPLORER_CLASS_DB"] = args.db                  # the started server's class database
    args.url = f"http://localhost:{args.port}"
    proc = start_server(args.port, None, False, args.run_log)
    try:
        wait_healthy(args.url, proc)
        asyncio.run(bench(args, proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except Exception:  # noqa: BLE001 a server that will not stop is killed
            proc.kill()


if __name__ == "__main__":
    main()
