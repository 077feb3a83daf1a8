"""A class on one server: N sessions switch heads on the explorer page of a real `streamlit run` server.

    python scripts/bench/bench_class.py                 # starts `streamlit run app/main.py` itself, runs every phase
    python scripts/bench/bench_class.py --url http://localhost:8501 --server-pid 1234     # a server already running
    python scripts/bench/bench_class.py --check-browser  # first: is the light client faithful to Chromium?
    python scripts/bench/bench_class.py --live-run full --watchers 10   # while "Watch it learn" trains

Phases: "one" (a single session switches heads), "random" (20 sessions, each switching at random times,
about one switch every 3 s) and "burst" (8 sessions switching at the same moment, a few rounds). Each prints
the server's script-run time and the round trip (p50/p95/max), errors, the server's CPU time per run and its
memory (RSS); the last line is a one-line summary against TARGETS_MS.

--live-run slow|full keeps a "Watch it learn" training going through every phase: one more session
opens that page, picks the speed and presses Start, and presses it again whenever the run has ended;
--watchers N more sessions watch it as a browser does, redrawing the page's fragment at the interval the server
asks for (Streamlit's auto_rerun). The head-switch figures then are the other sessions' while a run goes; the
watchers' redraws and the training's own speed are printed after them.

A browser per student costs too much CPU on a small machine, so each session is a light client speaking
Streamlit's websocket protocol with the protobufs Streamlit ships (streamlit.proto): it opens /_stcore/stream
as the browser does, keeps each widget's state as the browser's widget manager does (the value the server drew,
until the user changes it), and for a head switch sends the same `rerun_script` BackMsg: every widget's state
with only the head changed, the page's script hash and the context info. --check-browser drives one Chromium
session (playwright) through the same switch and compares its BackMsg and the deltas it gets with the client's.

Times: the round trip runs from the BackMsg sent to `script_finished` received. The script run is the app's
own timer: app/main.py appends each run's duration (its first line to its last, sidebar and page) to the
file named by ATTN_EXPLORER_RUN_LOG, which this script sets for the server it starts (--run-log for one already
running). It does not depend on how promptly this client reads its socket. Without a log, the run is timed
from the protocol instead (`new_session` when a run starts to `script_finished`, as read by this client: on a
busy machine the client reads late and the span shrinks). --page-profile also asks Streamlit for its own
timer (PageProfile.exec_time, sent with browser.gatherUsageStats on; nothing leaves the machine) as a
cross-check: it is off by default because its per-command telemetry costs the server CPU.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from core.checkpoint import read_jsonl
from core.paths import REPO

# A head switch must feel immediate to one user and stay under half a second for a class: a script run's p50 with
# one session, its p95 with the random and burst phases' many.
TARGETS_MS = {"one": 50, "random": 500, "burst": 500}
WATCH_PAGE = "watch_it_learn"                             # the live training's page (its url path)
REDRAW = "watch_it_learn/redraw"                           # how that page logs a redraw of its fragment
SPEED_LABELS = {"slow": "Slow (about 30 s)", "full": "Full speed"}   # its speed radio's options, as the page words them
CONTEXT = {"timezone": "UTC", "timezone_offset": 0, "locale": "en-US", "is_embedded": False, "color_scheme": "light"}


@dataclass
class Run:
    """One script run as one session saw it."""
    phase: str
    round_trip: float = 0.0               # seconds from the BackMsg sent to script_finished received
    script: float | None = None           # seconds from new_session (the run started) to script_finished
    exec_time: float | None = None        # seconds, Streamlit's PageProfile.exec_time (with --page-profile)
    deltas: list = field(default_factory=list)    # (delta path, element or block type) in arrival order
    errors: list = field(default_factory=list)
    texts: list = field(default_factory=list)     # the bodies of alerts (info, success, ...) on the page


def widget_state(kind: str, w) -> WidgetState | None:
    """The state a browser keeps for a widget it has just drawn, or None for those that keep none (buttons,
    charts without selections). Choices travel as their formatted labels, as the frontend sends them."""
    s = WidgetState(id=w.id)
    if kind in ("selectbox", "radio"):
        if w.HasField("raw_value"):
            s.string_value = w.raw_value
        elif w.HasField("default"):
            s.string_value = w.options[w.default]
    elif kind == "button_group":                  # segmented_control, pills
        chosen = list(w.raw_values) if w.set_value else [w.options[i].content for i in w.default]
        s.string_array_value.data.extend(chosen)
    elif kind == "checkbox":                      # checkbox, toggle
        s.bool_value = w.value if w.set_value else w.default
    elif kind in ("text_area", "text_input"):
        if w.HasField("value"):
            s.string_value = w.value
        elif w.HasField("default"):
            s.string_value = w.default
    else:
        return None
    return s


class Session:
    """One student's tab: a websocket to /_stcore/stream, its widget states, one script run at a time."""

    def __init__(self, url: str, page: str = ""):
        self.url, self.page = url.rstrip("/"), page    # page: the url path of the page to open ("": the default)
        self.auto: tuple[float, str] | None = None    # (interval s, fragment id) of a fragment that reruns itself
        self.pressed: WidgetState | None = None       # a button clicked for the next run
        self.states: dict[str, WidgetState] = {}      # widget id -> state, as the browser's widget manager keeps it
        self.elements: dict[str, tuple] = {}          # widget id -> (kind, proto) as last drawn
        self.page_hash, self.cached = "", set()
        self.sent: list[BackMsg] = []

    async def open(self):
        self.ws = await connect("ws" + self.url[len("http"):] + "/_stcore/stream", subprotocols=["streamlit"],
                                origin=self.url, max_size=None, ping_interval=None, open_timeout=120)

    async def close(self):
        await self.ws.close()

    def switch(self, key: str, rng: random.Random, label: str | None = None) -> str:
        """Pick another option of the selectbox with this key, as a click in its list does; returns the label."""
        for wid, (_kind, proto) in self.elements.items():
            if wid.endswith("-" + key) and wid in self.states:
                label = label or rng.choice([o for o in proto.options if o != self.states[wid].string_value])
                self.states[wid].string_value = label
                return label
        raise LookupError(f"no widget {key!r} on the page")

    def press(self, key: str) -> bool:
        """Click the button with this key in the next run, as the browser sends a click; False if it is disabled."""
        wid, proto = next(((w, p) for w, (kind, p) in self.elements.items()
                           if kind == "button" and w.endswith("-" + key)), (None, None))
        if wid is None:
            raise LookupError(f"no button {key!r} on the page")
        if proto.disabled:
            return False
        self.pressed = WidgetState(id=wid, trigger_value=True)
        return True

    def back_msg(self, fragment_id: str | None = None) -> BackMsg:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.widget_states.widgets.extend(self.states.values())
        if self.pressed is not None:                          # a click counts for one run only
            cs.widget_states.widgets.append(self.pressed)
            self.pressed = None
        if fragment_id:
            cs.fragment_id, cs.is_auto_rerun = fragment_id, True
        if self.page_hash:
            cs.page_script_hash = self.page_hash
        elif self.page:
            cs.page_name = self.page
        cs.cached_message_hashes.extend(sorted(self.cached))
        for k, v in {**CONTEXT, "url": self.url + "/"}.items():
            setattr(cs.context_info, k, v)
        return msg

    async def run(self, phase: str, timeout: float, fragment_id: str | None = None) -> Run:
        """Send a rerun with the current widget states (of one fragment: a redraw); read until it has finished."""
        msg, run, drawn, started = self.back_msg(fragment_id), Run(phase), set(), None
        self.sent.append(msg)
        t0 = time.perf_counter()
        try:
            await self.ws.send(msg.SerializeToString())
            async with asyncio.timeout(timeout):
                while True:
                    fwd = ForwardMsg.FromString(await self.ws.recv())
                    if fwd.WhichOneof("type") == "new_session":
                        started = time.perf_counter()
                    if self._handle(fwd, run, drawn):
                        run.script = None if started is None else time.perf_counter() - started
                        break
        except Exception as e:  # noqa: BLE001 a timeout, a closed socket: counted as errors, none stops the bench
            run.errors.append(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
        run.round_trip = time.perf_counter() - t0
        if drawn and not fragment_id:                # the browser forgets widgets that were not drawn again
            self.states = {k: v for k, v in self.states.items() if k in drawn}
        return run

    def _handle(self, fwd: ForwardMsg, run: Run, drawn: set) -> bool:
        """Update the session from one ForwardMsg; True at the end of the run."""
        kind = fwd.WhichOneof("type")
        if fwd.metadata.cacheable and fwd.hash:      # the browser keeps these and lists them in its next rerun
            self.cached.add(fwd.hash)
        if kind == "navigation":
            self.page_hash = fwd.navigation.page_script_hash
        elif kind == "auto_rerun":
            self.auto = (fwd.auto_rerun.interval, fwd.auto_rerun.fragment_id)
        elif kind == "stop_auto_rerun" and self.auto and self.auto[1] in fwd.stop_auto_rerun.fragment_ids:
            self.auto = None                          # the server would ignore (never answer) a redraw of it
        elif kind == "page_profile":
            run.exec_time = fwd.page_profile.exec_time / 1e6
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "add_block":
            run.deltas.append((tuple(fwd.metadata.delta_path), "block"))
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            ekind = el.WhichOneof("type")
            run.deltas.append((tuple(fwd.metadata.delta_path), ekind))
            if ekind == "exception":
                run.errors.append(f"exception on the page: {el.exception.type}: {el.exception.message[:200]}")
            elif ekind == "alert" and el.alert.format == el.alert.ERROR:
                run.errors.append(f"error on the page: {el.alert.body[:200]}")
            if ekind == "alert":
                run.texts.append(el.alert.body)
            proto = getattr(el, ekind)
            if ekind == "button" and proto.id:
                self.elements[proto.id] = (ekind, proto)
            state = widget_state(ekind, proto) if getattr(proto, "id", "") else None
            if state is not None:
                drawn.add(proto.id)
                self.elements[proto.id] = (ekind, proto)
                if proto.id not in self.states or getattr(proto, "set_value", False):
                    self.states[proto.id] = state
        elif kind == "script_finished":
            if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:   # st.rerun: the next run follows
                return False
            if fwd.script_finished not in (ForwardMsg.FINISHED_SUCCESSFULLY,
                                           ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY):
                run.errors.append(f"script finished with status {fwd.script_finished}")
            return True
        return False


# ---- the server: start it, its memory and CPU time -----------------------------------------------------------

def proc_stat(pid: int | None) -> tuple[float | None, float | None]:
    """(RSS in MB, user + system CPU seconds so far) of a process, from /proc (Linux); None where unknown."""
    try:
        rss = next(int(line.split()[1]) / 1024 for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("VmRSS:"))
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return rss, (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, TypeError, ValueError, IndexError, StopIteration):
        return None, None


def start_server(port: int, checkpoints: str | None, page_profile: bool, run_log: str):
    """`streamlit run app/main.py` on this port logging its runs (and PageProfile if asked)."""
    env = dict(os.environ, ATTN_EXPLORER_RUN_LOG=run_log,
               **({"ATTN_EXPLORER_CHECKPOINTS": checkpoints} if checkpoints else {}))
    cmd = [sys.executable, "-m", "streamlit", "run", str(REPO / "app" / "main.py"), "--server.port", str(port),
           "--server.headless", "true", "--browser.gatherUsageStats", str(page_profile).lower()]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL)


def wait_healthy(url: str, proc=None, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"the server exited at start (code {proc.returncode}); see its output above")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"no healthy Streamlit server at {url} after {timeout:.0f} s")


def logged_runs(run_log: str | None, since: float, until: float, page: str | None = "") -> list[float]:
    """Durations (s) of the script runs the app logged between two wall-clock times, of one page (the url path;
    "": the explorer, where the sessions switch heads; None: every page)."""
    try:
        entries = read_jsonl(run_log, skip_bad=True) if run_log else []     # the server may be writing a line
    except OSError:
        return []
    return [e["seconds"] for e in entries if since <= e["t"] <= until and (page is None or e.get("page", "") == page)]


class ServerWatch:
    """While a phase runs: the server's RSS (sampled twice a second), the CPU time it used, the runs it logged."""

    def __init__(self, pid, run_log=None):
        self.pid, self.run_log, self.rss, self.cpu = pid, run_log, [], None

    async def __aenter__(self):
        self.cpu0, self.t0 = proc_stat(self.pid)[1], time.time()
        self.task = asyncio.create_task(self._sample())
        return self

    async def _sample(self):
        while True:
            if (rss := proc_stat(self.pid)[0]) is not None:
                self.rss.append(rss)
            await asyncio.sleep(0.5)

    async def __aexit__(self, *exc):
        self.task.cancel()
        rss, cpu1 = proc_stat(self.pid)
        self.rss += [rss] if rss is not None else []
        self.cpu = None if self.cpu0 is None or cpu1 is None else cpu1 - self.cpu0
        await asyncio.sleep(0.2)                  # the last run's log line is written just after script_finished
        self.logged = logged_runs(self.run_log, self.t0, time.time())


# ---- phases -----------------------------------------------------------------------------------------------

async def switch_and_run(s: Session, phase: str, rng: random.Random, timeout: float) -> Run:
    try:
        s.switch("head", rng)
    except LookupError as e:              # the page did not draw (an error, a slow first load): counted
        return Run(phase, errors=[str(e)])
    return await s.run(phase, timeout)


async def phase_one(sessions, args, rng) -> list[Run]:
    """A single session switches heads, one switch after the other."""
    runs = []
    for _ in range(args.one_switches):
        runs.append(await switch_and_run(sessions[0], "one", rng, args.run_timeout))
        await asyncio.sleep(0.3)
    return runs


async def phase_random(sessions, args, rng) -> list[Run]:
    """Every session switches heads at random times (Poisson, mean gap args.gap s) for args.seconds."""
    end, runs = time.perf_counter() + args.seconds, []

    async def student(s: Session, r: random.Random):
        while True:
            await asyncio.sleep(r.expovariate(1 / args.gap))
            if time.perf_counter() > end:
                return
            runs.append(await switch_and_run(s, "random", r, args.run_timeout))

    await asyncio.gather(*(student(s, random.Random(rng.random())) for s in sessions[: args.sessions]))
    return runs


async def phase_burst(sessions, args, rng) -> list[Run]:
    """args.burst sessions switch heads at the same moment, args.rounds times."""
    runs = []
    for _ in range(args.rounds):
        runs += await asyncio.gather(*(switch_and_run(s, "burst", rng, args.run_timeout)
                                       for s in sessions[: args.burst]))
        await asyncio.sleep(1.0)
    return runs


def pct(xs: list, q: int) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if len(xs) > 1 else xs[0]


def report(name: str, runs: list[Run], watch: ServerWatch) -> dict:
    """Print one phase's figures (milliseconds); return them for the summary line."""
    def ms(attr):
        return [getattr(r, attr) * 1000 for r in runs if getattr(r, attr) is not None]
    logged = [s * 1000 for s in watch.logged]
    script = logged or ms("script")
    rt, ex = [r.round_trip * 1000 for r in runs if not r.errors], ms("exec_time")
    errors = [e for r in runs for e in r.errors]
    out = {"errors": len(errors), "script": script, "rt": rt}
    line = f"{name:<7}{len(runs):4d} runs"
    for label, xs in (("script run" if logged else "script (span)", script), ("round trip", rt), ("PageProfile", ex)):
        if xs:
            line += f" | {label} p50 {pct(xs, 50):5.0f} p95 {pct(xs, 95):5.0f} max {max(xs):5.0f} ms"
    if watch.cpu is not None and runs:
        line += f" | server CPU {watch.cpu / len(runs) * 1000:4.0f} ms/run"
    if watch.rss:
        line += f" | RSS {watch.rss[0]:.0f}->{watch.rss[-1]:.0f} MB"
    print(line + f" | errors {len(errors)}")
    for e in sorted(set(errors))[:5]:
        print(f"         error: {e}")
    return out


def summary(results: dict, args, pid) -> str:
    parts = []
    for phase, r in results.items():
        label = {"one": "1 session", "random": f"{args.sessions} random", "burst": f"{args.burst} at once"}[phase]
        if not r["script"]:
            parts.append(f"{label}: no finished runs, {r['errors']} errors")
            continue
        q = 50 if phase == "one" else 95
        value = pct(r["script"], q)
        verdict = "ok" if value < TARGETS_MS[phase] else f"OVER {TARGETS_MS[phase]}"
        parts.append(f"{label}: script p{q} {value:.0f} ms ({verdict}), round trip p95 {pct(r['rt'], 95):.0f} ms, "
                     f"{r['errors']} errors")
    rss = proc_stat(pid)[0]
    live = f" [live run, {args.live_run} speed, {args.watchers} watchers]" if args.live_run else ""
    return (f"SUMMARY{live} {' | '.join(parts)} | server RSS {'n/a' if rss is None else f'{rss:.0f} MB'} | "
            f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


# ---- a live "Watch it learn" run while the class switches heads ------------------------------------------------

DONE = re.compile(r"Done: ([\d,]+) steps in (\d+) s")


@dataclass
class LiveRuns:
    """What the sessions on the training page saw: runs started, the finished runs' (steps, seconds), redraws."""
    starts: int = 0
    finished: list = field(default_factory=list)
    redraws: list = field(default_factory=list)       # Run of each watcher's fragment redraw
    going: asyncio.Event = field(default_factory=asyncio.Event)
    logged: list = field(default_factory=list)        # seconds of each redraw, as the server logged it


async def keep_training(url: str, speed: str, timeout: float, stop: asyncio.Event, live: LiveRuns) -> None:
    """One session on the training page: picks the speed, presses Start, and presses it again once a run ended."""
    s = Session(url, page=WATCH_PAGE)
    await s.open()
    await s.run("train", timeout)
    s.switch("toy_speed", random.Random(), SPEED_LABELS[speed])
    s.switch("toy_task", random.Random(), "Reverse")
    seen = set()
    while not stop.is_set():
        pressed = s.press("toy_start")
        run = await s.run("train", timeout)
        live.starts += pressed
        for text in run.texts:
            if (m := DONE.search(text)) and text not in seen:
                seen.add(text)
                live.finished.append((int(m.group(1).replace(",", "")), int(m.group(2))))
        if pressed:
            live.going.set()
        try:
            await asyncio.wait_for(stop.wait(), 2.0)
        except TimeoutError:
            pass
    await s.close()


async def watch_training(url: str, timeout: float, stop: asyncio.Event, live: LiveRuns) -> None:
    """One student watching the training page: its fragment redrawn at the interval the server asks for."""
    s = Session(url, page=WATCH_PAGE)
    await s.open()
    await s.run("watch", timeout)
    while not stop.is_set():
        interval, fragment = s.auto or (1.0, None)
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            pass
        if fragment and not stop.is_set():
            live.redraws.append(await s.run("redraw", min(timeout, 30.0), fragment_id=fragment))
    await s.close()


def live_report(args, live: LiveRuns) -> str:
    """The live run's line: runs started and finished, their speed, the watchers' redraws."""
    line = f"live run ({args.live_run} speed): {live.starts} started"
    if live.finished:
        steps, secs = map(sum, zip(*live.finished))
        line += f", {len(live.finished)} finished at {steps / max(secs, 1):.0f} steps/s"
    rt = [r.round_trip * 1000 for r in live.redraws if not r.errors]
    if rt:
        errors = sum(len(r.errors) for r in live.redraws)
        line += f" | {args.watchers} watchers: {len(live.redraws)} redraws"
        if live.logged:
            ms = [x * 1000 for x in live.logged]
            line += f", server run p50 {pct(ms, 50):.0f} p95 {pct(ms, 95):.0f} ms"
        line += f", round trip p50 {pct(rt, 50):.0f} p95 {pct(rt, 95):.0f} ms, {errors} errors"
    return line


async def bench(args, pid) -> None:
    rng, n = random.Random(args.seed), max(args.sessions, args.burst, 1)
    sessions = [Session(args.url) for _ in range(n)]
    t = time.perf_counter()
    await sessions[0].open()
    first = await sessions[0].run("first", args.run_timeout)     # cold: loads the model, translates, fills caches
    print(f"first page of the first session: {time.perf_counter() - t:.1f} s"
          + (f"  errors: {first.errors}" if first.errors else ""))
    async with ServerWatch(pid, args.run_log) as watch:          # the class arrives: everyone opens the page
        await asyncio.gather(*(s.open() for s in sessions[1:]))
        firsts = await asyncio.gather(*(s.run("open", args.run_timeout) for s in sessions[1:]))
    if firsts:
        report("open", list(firsts), watch)
    stop, live, side = asyncio.Event(), LiveRuns(), []
    if args.live_run:
        side.append(asyncio.create_task(keep_training(args.url, args.live_run, args.run_timeout, stop, live)))
        side += [asyncio.create_task(watch_training(args.url, args.run_timeout, stop, live))
                 for _ in range(args.watchers)]
        await asyncio.wait_for(live.going.wait(), args.run_timeout)
        await asyncio.sleep(1.0)                                  # the run's first steps and its watchers' pages
    live_since = time.time()
    results = {}
    for phase in args.phases:
        async with ServerWatch(pid, args.run_log) as watch:
            runs = await {"one": phase_one, "random": phase_random, "burst": phase_burst}[phase](sessions, args, rng)
        results[phase] = report(phase, runs, watch)
    stop.set()
    await asyncio.gather(*side, return_exceptions=True)
    if args.live_run:
        live.logged = logged_runs(args.run_log, live_since, time.time(), page=REDRAW)
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
    if args.live_run:
        print(live_report(args, live))
    print(summary(results, args, pid))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running server, e.g. http://localhost:8501 (default: start one)")
    ap.add_argument("--server-pid", type=int, help="the running server's process id, for its memory and CPU")
    ap.add_argument("--run-log", help="the file a running server logs its runs to (its ATTN_EXPLORER_RUN_LOG)")
    ap.add_argument("--port", type=int, default=8597, help="port for the server this script starts")
    ap.add_argument("--checkpoints", help="folder of checkpoints for the started server (default: checkpoints/)")
    ap.add_argument("--phases", nargs="+", default=["one", "random", "burst"], choices=["one", "random", "burst"])
    ap.add_argument("--sessions", type=int, default=20, help="sessions in the random phase")
    ap.add_argument("--gap", type=float, default=3.0, help="mean seconds between one session's switches")
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the random phase")
    ap.add_argument("--burst", type=int, default=8, help="sessions switching at the same moment")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the burst phase")
    ap.add_argument("--one-switches", type=int, default=10)
    ap.add_argument("--run-timeout", type=float, default=600.0, help="seconds before a run counts as failed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--page-profile", action="store_true",
                    help="the started server also reports Streamlit's own run timer (costs it some CPU)")
    ap.add_argument("--live-run", choices=list(SPEED_LABELS),
                    help="keep a 'Watch it learn' training going through every phase, at this speed")
    ap.add_argument("--watchers", type=int, default=0, help="with --live-run: sessions watching the training page")
    ap.add_argument("--check-browser", action="store_true",
                    help="first compare the light client with one Chromium session (playwright, /usr/bin/chromium)")
    args = ap.parse_args()

    proc = None
    if args.url is None:
        args.url = f"http://localhost:{args.port}"
        fd, args.run_log = tempfile.mkstemp(prefix="bench_class_runs_", suffix=".jsonl")
        os.close(fd)
        proc = start_server(args.port, args.checkpoints, args.page_profile, args.run_log)
        args.server_pid = proc.pid
    try:
        wait_healthy(args.url, proc)
        if args.check_browser:
            from scripts.bench.bench_class_browser import check_against_browser
            check_against_browser(args.url, Session, args.run_timeout)
        asyncio.run(bench(args, args.server_pid))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
            Path(args.run_log).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
