"""The class-load benchmark through the load balancer: scripts/serve.py with 1 replica and with 2, side by side in
one run (their phases interleaved), driven by bench_class.py's light websocket clients, each with its own sticky
cookie as a browser gets from nginx; then, from the measured CPU time per script run and memory per session, what a
class of 300 needs.

    python scripts/bench/bench_replicas.py                              # 20 sessions, 2 rounds of every phase
    python scripts/bench/bench_replicas.py --sessions 30 --followers 60 --rounds 3 --db postgresql://...

Phases, as bench_class.py runs them: "random" (every session switches heads on the explorer at random times, about
one switch every --gap s), "burst" (--burst sessions switch at the same moment) and "follow" (--followers students
in a class on the Lesson page, each redrawing the page's follow fragment at the interval the server asks for, as a
browser does; the teacher moves a step every --step-every s).

On a machine with few cores, two replicas share the same cores as one: the comparison then measures the balancer's
and the second process's cost, not the gain of more cores (except that one replica runs its sessions' scripts under
one Python GIL, so a second one can use a second core). Per student, the CPU time of the runs they cause and the
memory their sessions take are what the estimate for 300 scales.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import re
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import connect

from app.lesson.class_store import ClassStore
from app.lesson.steps import load_lesson
from scripts import balancer
from scripts.bench import bench_class as bc
from scripts.served import Served

CLASS_PAGE = "lesson"
STEP_WINDOW = 4.0            # seconds after a teacher's step in which the followers' CPU is counted as the step's
DELIVER = 3.0                # seconds in which every student should see the teacher's step (the class's target)


class StickySession(bc.Session):
    """A browser behind the balancer: its own sticky cookie, so every request and its websocket reach one replica;
    `query` is its address's query string (?class=CODE for a student)."""

    def __init__(self, url: str, page: str = "", query: str = ""):
        super().__init__(url, page)
        self.key, self.query, self.replica = secrets.token_hex(16), query, None

    async def open(self):
        self.ws = await connect("ws" + self.url[len("http"):] + "/_stcore/stream", subprotocols=["streamlit"],
                                origin=self.url, max_size=None, ping_interval=None, open_timeout=120,
                                additional_headers={"Cookie": f"{balancer.ROUTE_COOKIE}={self.key}"})
        self.replica = self.ws.response.headers.get(balancer.REPLICA_HEADER)

    def back_msg(self, fragment_id=None):
        msg = super().back_msg(fragment_id)
        msg.rerun_script.query_string = self.query
        return msg


class Watch:
    """While a phase runs: the replicas' and nginx's CPU time, the replicas' total RSS, the runs they logged (the
    same attributes as bench_class.ServerWatch, for its report())."""

    def __init__(self, pids: list[int], run_log: str, page: str | None = ""):
        self.pids, self.run_log, self.page, self.rss, self.cpu = pids, run_log, page, [], None

    def _cpu(self):
        times = [bc.proc_stat(p)[1] for p in self.pids]
        return None if None in times else sum(times)

    async def __aenter__(self):
        self.cpu0, self.t0 = self._cpu(), time.time()
        self.task = asyncio.create_task(self._sample())
        return self

    async def _sample(self):
        while True:
            self.rss.append(sum(bc.proc_stat(p)[0] or 0 for p in self.pids[1:]))
            await asyncio.sleep(0.5)

    async def __aexit__(self, *exc):
        self.task.cancel()
        cpu1 = self._cpu()
        self.cpu = None if self.cpu0 is None or cpu1 is None else cpu1 - self.cpu0
        await asyncio.sleep(0.2)
        self.logged = bc.logged_runs(self.run_log, self.t0, time.time(), self.page)


class Setup:
    """One scripts/serve.py with its sessions and its run log."""

    def __init__(self, replicas: int, folder: Path, db: str | None):
        self.replicas, self.run_log = replicas, str(folder / f"runs-{replicas}.jsonl")
        self.db_url = db or f"sqlite:///{folder / f'classes-{replicas}.sqlite3'}"
        self.served = Served(replicas, folder / f"serve-{replicas}.log", db=self.db_url,
                             env={"ATTN_EXPLORER_RUN_LOG": self.run_log})
        self.results: dict[str, list] = {}
        self.memory: float | None = None               # MB a session (weigh)
        self.base: float | None = None                 # MB a replica with the page warm, before those sessions

    @property
    def name(self) -> str:
        return f"{self.replicas} replica{'s' * (self.replicas > 1)}"

    def pids(self) -> list[int]:
        nginx = int(re.search(r"nginx pid (\d+)", self.served.output()).group(1))
        return [nginx, *self.served.pids().values()]

    def watch(self, page: str | None = "") -> Watch:
        return Watch(self.pids(), self.run_log, page)


async def arrive(setup: Setup, args) -> list[StickySession]:
    """The class opens the explorer: a first session warms every replica, then the rest arrive together."""
    url = setup.served.url
    sessions = [StickySession(url) for _ in range(max(args.sessions, args.burst))]
    warm = [StickySession(url) for _ in range(8 * setup.replicas)]       # enough cookies to reach every replica
    for s in warm:
        await s.open()
    seen = {}
    for s in warm:
        if s.replica not in seen:
            seen[s.replica] = await s.run("first", args.run_timeout)
    await asyncio.gather(*(s.close() for s in warm))
    async with setup.watch() as w:
        await asyncio.gather(*(s.open() for s in sessions))
        runs = await asyncio.gather(*(s.run("open", args.run_timeout) for s in sessions))
    bc.report(f"{setup.name}: open", list(runs), w)
    spread = {}
    for s in sessions:
        spread[s.replica] = spread.get(s.replica, 0) + 1
    print(f"{setup.name}: {len(sessions)} sessions over {len(spread)} replicas {sorted(spread.values())}")
    return sessions


async def rss(setup: Setup, samples: int = 5) -> float:
    """The replicas' total RSS (MB), the median of a few samples half a second apart (the allocator's noise)."""
    seen = []
    for _ in range(samples):
        seen.append(sum(bc.proc_stat(p)[0] or 0 for p in setup.pids()[1:]))
        await asyncio.sleep(0.5)
    return sorted(seen)[len(seen) // 2]


async def weigh(setup: Setup, args) -> float:
    """MB a session takes: the replicas' RSS before and after --memory-sessions more sessions open the explorer."""
    before = await rss(setup)
    extra = [StickySession(setup.served.url) for _ in range(args.memory_sessions)]
    for chunk in range(0, len(extra), 10):
        await asyncio.gather(*(s.open() for s in extra[chunk:chunk + 10]))
        await asyncio.gather(*(s.run("weigh", args.run_timeout) for s in extra[chunk:chunk + 10]))
    after = await rss(setup)
    await asyncio.gather(*(s.close() for s in extra), return_exceptions=True)
    setup.memory = (after - before) / len(extra)
    setup.base = before / setup.replicas
    print(f"{setup.name}: {len(extra)} more sessions: RSS {before:.0f} -> {after:.0f} MB, "
          f"{setup.memory:.2f} MB a session")
    return setup.memory


async def follow(setup: Setup, args) -> tuple[list, Watch]:
    """--followers students in a class on the Lesson page, redrawing its follow fragment as a browser does, while
    the teacher moves a step every --step-every s."""
    store = ClassStore(setup.db_url)
    lesson = load_lesson()
    code, secret = store.create_class(lesson.title, len(lesson.steps), step=2)
    students = [StickySession(setup.served.url, CLASS_PAGE, f"class={code}") for _ in range(args.followers)]
    await asyncio.gather(*(s.open() for s in students))
    for chunk in range(0, len(students), 10):                 # they join a few at a time, as a class does
        await asyncio.gather(*(s.run("join", args.run_timeout) for s in students[chunk:chunk + 10]))
    await quiet(setup.pids())               # the Lesson's "Watch it learn" model trains once when it first opens
    end, redraws, stop = time.perf_counter() + args.seconds, [], asyncio.Event()

    async def student(s: StickySession):
        await asyncio.sleep(random.random() * 1.5)
        while time.perf_counter() < end:
            interval, fragment = s.auto or (1.5, None)
            await asyncio.sleep(interval)
            if fragment:
                redraws.append(await s.run("follow", 30.0, fragment_id=fragment))

    pids, moves = setup.pids(), []

    def cpu() -> float:
        return sum(bc.proc_stat(p)[1] or 0 for p in pids)

    async def teacher():
        step = 2
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), args.step_every - STEP_WINDOW)
                continue
            except TimeoutError:
                pass
            before = cpu()                                       # the fragments' own pace, just before
            await asyncio.sleep(STEP_WINDOW / 2)
            idle = (cpu() - before) / (STEP_WINDOW / 2)
            step = 2 + (step - 1) % 3                            # steps 2, 3, 4 (no model work), round and round
            start = cpu()
            store.set_step(secret, step)
            await asyncio.sleep(STEP_WINDOW)                     # every student's page follows within it
            moves.append((cpu() - start - idle * STEP_WINDOW) / len(students))

    async with setup.watch(page=None) as w:
        moving = asyncio.create_task(teacher())
        await asyncio.gather(*(student(s) for s in students))
        stop.set()
        await moving
    w.student_seconds = len(students) * (time.time() - w.t0)
    w.per_step = moves                     # CPU seconds a step change costs, per student
    await asyncio.gather(*(s.close() for s in students), return_exceptions=True)
    store.end(secret)
    store.dispose()
    return redraws, w


async def quiet(pids: list[int], busy: float = 0.1, timeout: float = 180.0) -> None:
    """Until the processes use less than `busy` of a core over a second (their one-off work done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = sum(bc.proc_stat(p)[1] or 0 for p in pids)
        await asyncio.sleep(1.0)
        if sum(bc.proc_stat(p)[1] or 0 for p in pids) - before < busy:
            return


async def bench(args) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench_replicas_"))
    setups = [Setup(n, folder, args.db) for n in (1, 2)]
    bursts = argparse.Namespace(**{**vars(args), "rounds": args.burst_rounds})     # bench_class's own rounds
    try:
        for s in setups:
            s.served.wait_ready()
        print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
        sessions = {s.name: await arrive(s, args) for s in setups}
        rng = random.Random(args.seed)
        for r in range(args.rounds):
            for s in (setups if r % 2 == 0 else setups[::-1]):    # interleaved: neither side always goes first
                for phase in args.phases:
                    if phase == "follow":
                        runs, w = await follow(s, args)
                    else:
                        async with s.watch() as w:
                            runs = await (bc.phase_random(sessions[s.name], args, rng) if phase == "random"
                                          else bc.phase_burst(sessions[s.name], bursts, rng))
                    s.results.setdefault(phase, []).append((runs, w))
                    bc.report(f"{s.name} round {r + 1}: {phase}", runs, w)
        for s in setups:
            await asyncio.gather(*(x.close() for x in sessions[s.name]), return_exceptions=True)
        if args.memory_sessions:
            await weigh(setups[0], args)
        summary(setups, args)
    finally:
        for s in setups:
            s.served.stop()


def per_run_cpu(results: list) -> float | None:
    """CPU seconds per run over a phase's rounds (replicas and nginx together)."""
    runs = sum(len(r) for r, _ in results)
    cpus = [w.cpu for _, w in results]
    return None if not runs or None in cpus else sum(cpus) / runs


def per_student_second(results: list) -> float | None:
    """CPU seconds a following student costs each second (the follow phase's CPU over students x seconds)."""
    cpus = [w.cpu for _, w in results]
    return None if not results or None in cpus else sum(cpus) / sum(w.student_seconds for _, w in results)


def summary(setups: list[Setup], args) -> None:
    print(f"\nSUMMARY (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"{args.rounds} rounds, interleaved)")
    for s in setups:
        parts = []
        for phase, results in s.results.items():
            runs = [run for r, _ in results for run in r]
            script = [x * 1000 for _, w in results for x in w.logged] or \
                [run.script * 1000 for run in runs if run.script is not None]
            rt = [run.round_trip * 1000 for run in runs if not run.errors]
            errors = sum(len(run.errors) for run in runs)
            cpu = per_run_cpu(results)
            if phase == "follow" and cpu is not None:          # its cost: a following student's, each second
                cost = f"CPU {per_student_second(results) * 1000:.1f} ms a student-second"
            else:
                cost = "CPU n/a" if cpu is None else f"CPU {cpu * 1000:.0f} ms/run"
            if rt and script:
                parts.append(f"{phase}: {len(runs)} runs, script p50 {bc.pct(script, 50):.0f} p95 "
                             f"{bc.pct(script, 95):.0f} ms, round trip p95 {bc.pct(rt, 95):.0f} ms, {cost}, "
                             f"{errors} errors")
            else:
                parts.append(f"{phase}: {len(runs)} runs, {errors} errors")
        print(f"  {s.name}: " + " | ".join(parts))
    estimate(setups[-1], setups[0], args)


def estimate(s: Setup, weighed: Setup, args, students: int = 300) -> None:
    """On paper: the cores and replicas a class of 300 needs, from this run's CPU per run and per following
    student, and the memory a session and a replica take."""
    switch = per_run_cpu(s.results.get("random", []))
    redraw = per_student_second(s.results.get("follow", []))
    peak = max((max(w.rss) for results in s.results.values() for _, w in results if w.rss), default=0)
    base = peak / s.replicas                   # a replica's RSS at its highest here, its sessions included
    print(f"\nOn paper, a class of {students}: one replica uses at most about one core (Streamlit runs its "
          f"scripts under one GIL), kept {args.utilization:.0%} busy at most; {base:.0f} MB a replica at its peak "
          "here" + (f", {weighed.memory:.2f} MB a session more" if weighed.memory is not None else ""))
    steps = [x for _, w in s.results.get("follow", []) for x in getattr(w, "per_step", [])]
    if steps:
        step = statistics.median(steps)
        n = max(1, math.ceil(students * step / DELIVER))
        print(f"  a step change: {step * 1000:.0f} ms of CPU per student (median of {len(steps)}): "
              f"{students * step:.1f} CPU-seconds for {students}, within {DELIVER:g} s on {n} cores -> {n} replicas")
    for what, busy in (("following the lesson", None if redraw is None else students * redraw),
                       (f"switching heads every {args.gap:g} s", None if switch is None
                        else students * switch / args.gap)):
        if busy is None:
            continue
        n = max(1, math.ceil(busy / args.utilization))
        memory = n * base + students * max(weighed.memory or 0, 0)
        print(f"  {what}: {busy:.1f} cores busy -> {n} replica{'s' * (n > 1)} on {n} cores, about "
              f"{memory / 1024:.1f} GB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases", nargs="+", default=["random", "burst", "follow"],
                    choices=["random", "burst", "follow"])
    ap.add_argument("--sessions", type=int, default=20, help="sessions switching heads in the random phase")
    ap.add_argument("--gap", type=float, default=3.0, help="mean seconds between one session's switches")
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the random and follow phases")
    ap.add_argument("--burst", type=int, default=8, help="sessions switching at the same moment")
    ap.add_argument("--burst-rounds", type=int, default=3, help="bursts in one burst phase")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of each phase on each side")
    ap.add_argument("--followers", type=int, default=30, help="students following a class in the follow phase")
    ap.add_argument("--step-every", type=float, default=10.0, help="seconds between the teacher's steps")
    ap.add_argument("--utilization", type=float, default=0.6, help="the share of a core the estimate may use")
    ap.add_argument("--memory-sessions", type=int, default=60,
                    help="sessions opened at the end to weigh one (on the one-replica side; 0: none)")
    ap.add_argument("--db", help="the class database's URL (default: a SQLite file of each side)")
    ap.add_argument("--run-timeout", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.one_switches = 0
    asyncio.run(bench(args))


if __name__ == "__main__":
    main()
