"""A running scripts/serve.py seen from outside, for the tests and the benchmark: start it, wait until it is ready,
its replicas' processes, and a cookie that pins a browser to one replica (the balancer's own sticky cookie, with a
key found to hash onto that replica)."""
from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from scripts import balancer

READY = re.compile(r"^ready: ")
STARTED = re.compile(r"^replica (\d+): pid (\d+) on http://127\.0\.0\.1:(\d+)")


def free_ports(n: int, tries: int = 200) -> int:
    """The first of n consecutive free ports on 127.0.0.1."""
    for _ in range(tries):
        base = secrets.randbelow(20000) + 20000
        socks = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports found")


class Served:
    """`python scripts/serve.py` with n replicas on 127.0.0.1, its output in `log` (a file)."""

    def __init__(self, replicas: int, log: Path, db: str | None = None, env: dict | None = None,
                 restart: bool = True):
        self.port, self.replica_port = free_ports(1), free_ports(replicas)
        self.log, self.replicas = Path(log), replicas
        cmd = [sys.executable, str(balancer.REPO / "scripts" / "serve.py"), "--replicas", str(replicas),
               "--port", str(self.port), "--replica-port", str(self.replica_port), "--address", "127.0.0.1"]
        cmd += (["--db", db] if db else []) + ([] if restart else ["--no-restart"])
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(cmd, cwd=balancer.REPO, env={**os.environ, **(env or {})}, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 240.0) -> None:
        """Until the launcher says ready; RuntimeError with its output if it exits or the time is up."""
        deadline = time.monotonic() + timeout
        while not any(READY.match(line) for line in self.output().splitlines()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"scripts/serve.py is not ready (exit code {self.proc.poll()}):\n"
                                   f"{self.output()[-3000:]}")
            time.sleep(0.2)

    def pids(self) -> dict[int, int]:
        """Each replica's port -> the pid of its latest process."""
        return {int(m.group(3)): int(m.group(2)) for line in self.output().splitlines() if (m := STARTED.match(line))}

    def replica_ports(self) -> list[int]:
        return [self.replica_port + i for i in range(self.replicas)]

    def answered_by(self, cookie: str | None, path: str = "/_stcore/health") -> int:
        """The port of the replica that answers a request carrying this sticky cookie (its key)."""
        req = urllib.request.Request(self.url + path, headers={"Cookie": f"{balancer.ROUTE_COOKIE}={cookie}"}
                                     if cookie else {})
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.headers[balancer.REPLICA_HEADER].rsplit(":", 1)[1])

    def pin(self, port: int, tries: int = 64) -> str:
        """A sticky-cookie key that the balancer sends to the replica on this port."""
        for _ in range(tries):
            key = secrets.token_hex(16)
            if self.answered_by(key) == port:
                return key
        raise RuntimeError(f"no cookie key led to the replica on port {port} in {tries} tries")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, as an operator stops it; the process group killed if it has not stopped in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode
