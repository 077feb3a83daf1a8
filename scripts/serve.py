"""Several replicas of the app behind nginx on this machine, without Docker: N `streamlit run app/main.py` on N
ports of 127.0.0.1 and Debian's nginx in front of them with sticky sessions, configured from the template that the
container recipe uses too (deploy/nginx/); Ctrl-C or SIGTERM stops them all.

    python scripts/serve.py --replicas 2 --port 8080 --db postgresql://attn:secret@localhost/attn
    python scripts/serve.py --replicas 3 --port 8080 --replica-port 8601 --address 127.0.0.1

A replica that dies is started again (unless --no-restart); meanwhile its visitors' browsers reconnect through
nginx to a live replica. The replicas share this environment's settings (ATTN_EXPLORER_HUB, ATTN_EXPLORER_CLASSES,
...: docs/deploy.md), the explorer's cache of converted models, the class database (--db, else
$ATTN_EXPLORER_CLASS_DB, else this machine's SQLite file) and one Streamlit cookie secret
($STREAMLIT_SERVER_COOKIE_SECRET, else a new random one), so that a visitor moved to another replica is not
refused by its XSRF check.
"""
from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from scripts import balancer

START_TIMEOUT = 180.0        # seconds for a replica to answer its health check (a cold start imports torch)
RESTARTS = 3                 # a replica that dies this many times in RESTART_WINDOW s is not started again
RESTART_WINDOW = 60.0


class ServeError(RuntimeError):
    """A replica or nginx could not start: worded for the person who started them."""


def healthy(url: str) -> bool:
    """Whether a Streamlit server (or the balancer in front of one) answers its health check."""
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=3) as r:
            return r.status == 200
    except OSError:
        return False


def port_free(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


@dataclass
class Replica:
    """One `streamlit run app/main.py` on one port of 127.0.0.1; its output relayed, each line named by it."""
    number: int
    port: int
    env: dict
    proc: subprocess.Popen | None = None
    starts: list = field(default_factory=list)     # when it was started (time.monotonic)
    given_up: bool = False                         # dead and not to be started again

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "streamlit", "run", str(balancer.REPO / "app" / "main.py"),
               "--server.port", str(self.port), "--server.address", "127.0.0.1", "--server.headless", "true"]
        self.proc = subprocess.Popen(cmd, cwd=balancer.REPO, env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.starts.append(time.monotonic())
        print(f"replica {self.number}: pid {self.proc.pid} on {self.url}", flush=True)
        threading.Thread(target=self._relay, args=(self.proc,), daemon=True).start()

    def _relay(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            print(f"replica {self.number} | {line.rstrip()}", flush=True)

    def dead(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def may_restart(self) -> bool:
        """Not when it died RESTARTS times within RESTART_WINDOW seconds: something is wrong beyond one crash."""
        return len([t for t in self.starts if time.monotonic() - t < RESTART_WINDOW]) < RESTARTS


def wait_until(check, what: str, procs: list, timeout: float, stop: threading.Event) -> None:
    """Poll `check()` until it is true; ServeError when one of `procs` exits or the time is up."""
    deadline = time.monotonic() + timeout
    while not check():
        for name, proc in procs:
            if proc.poll() is not None:
                raise ServeError(f"{name} exited while starting (code {proc.returncode}); see its output above.")
        if stop.is_set():
            raise KeyboardInterrupt
        if time.monotonic() > deadline:
            raise ServeError(f"{what} did not answer within {timeout:.0f} s.")
        time.sleep(0.3)


def stop_process(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, grace: float = 15.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def replica_env(args) -> dict:
    """The replicas' environment: this one, with the class database and one cookie secret for them all."""
    env = dict(os.environ)
    if args.db:
        env["ATTN_EXPLORER_CLASS_DB"] = args.db
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    return env


def serve(args, stop: threading.Event) -> int:
    """Start the replicas, then nginx; keep them going until `stop` is set; stop them all."""
    nginx = balancer.find_nginx(args.nginx)
    ports = [args.replica_port + i for i in range(args.replicas)]
    for address, port in [(args.address, args.port)] + [("127.0.0.1", p) for p in ports]:
        if not port_free(address, port):
            raise ServeError(f"port {port} on {address} is in use: choose another with --port or --replica-port.")
    folder = Path(tempfile.mkdtemp(prefix="attn-explorer-nginx-"))
    env = replica_env(args)
    replicas = [Replica(i + 1, port, env) for i, port in enumerate(ports)]
    proxy = None
    try:
        listen = f"[{args.address}]:{args.port}" if ":" in args.address else f"{args.address}:{args.port}"   # IPv6
        conf = balancer.write_config(folder, listen, ports)
        balancer.check(nginx, conf)
        for r in replicas:
            r.start()
        for r in replicas:
            wait_until(lambda r=r: healthy(r.url), f"replica {r.number} ({r.url})",
                       [(f"replica {r.number}", r.proc)], START_TIMEOUT, stop)
        proxy = balancer.start(nginx, conf)
        host = "localhost" if args.address in ("0.0.0.0", "::", "127.0.0.1") else args.address
        wait_until(lambda: healthy(f"http://127.0.0.1:{args.port}"), "nginx", [("nginx", proxy)], 30, stop)
        many = "s" * (args.replicas > 1)
        print(f"ready: http://{host}:{args.port} ({args.replicas} replica{many} on port{many} "
              f"{', '.join(map(str, ports))}; nginx pid {proxy.pid})", flush=True)
        while not stop.wait(0.5):
            died = proxy.poll() is not None or any(r.dead() and not r.given_up for r in replicas)
            if died and stop.wait(1.0):        # Ctrl-C in a terminal reaches every child too: a stop, not a crash
                break
            if proxy.poll() is not None:
                raise ServeError(f"nginx exited (code {proxy.returncode}); see its output above.")
            for r in replicas:
                if r.dead() and not r.given_up:
                    told = f"replica {r.number} exited (code {r.proc.returncode})"
                    if args.restart and r.may_restart():
                        print(f"{told}; starting it again", flush=True)
                        r.start()
                    else:
                        print(f"{told}; nginx sends its visitors to the others", flush=True)
                        r.given_up = True
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        print("stopping…", flush=True)
        stop_process(proxy, signal.SIGQUIT, 5.0)          # nginx's graceful stop: open sockets closed
        for r in replicas:
            if r.proc is not None and r.proc.poll() is None:
                r.proc.terminate()
        for r in replicas:
            stop_process(r.proc)
        shutil.rmtree(folder, ignore_errors=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replicas", type=int, default=2, help="how many `streamlit run` processes (default 2)")
    p.add_argument("--port", type=int, default=8080, help="the port nginx listens on (default 8080)")
    p.add_argument("--address", default="0.0.0.0", help="the address nginx listens on (default 0.0.0.0: every "
                   "network of this machine; 127.0.0.1: this machine only)")
    p.add_argument("--replica-port", type=int, default=8601,
                   help="the first replica's port on 127.0.0.1; the others follow it (default 8601)")
    p.add_argument("--db", help="the class database's URL for every replica, e.g. postgresql://user:pw@host/db "
                   "(default: $ATTN_EXPLORER_CLASS_DB, else this machine's SQLite file)")
    p.add_argument("--nginx", help="the nginx program (default: nginx on PATH, else /usr/sbin/nginx)")
    p.add_argument("--no-restart", dest="restart", action="store_false",
                   help="do not start a replica again when it dies")
    args = p.parse_args(argv)
    if args.replicas < 1:
        p.error("--replicas must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        return serve(args, stop)
    except (balancer.BalancerError, ServeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
