"""A real PostgreSQL server for the tests: Debian's postgresql (/usr/lib/postgresql/<version>/bin), started on a free
localhost port in a temporary folder owned by the postgres user (PostgreSQL refuses to run as root), and stopped at
the end. `.ci/run` installs the package; without it the tests that need it are skipped and say why.

    def test_something(postgres_url):           # the fixture (tests/conftest.py): a URL for SQLAlchemy
        ...
    def test_a_restart(postgres_server):        # the server itself: .stop() and .start() mid-test, .url
        ...
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def why_not() -> str | None:
    """Why a real PostgreSQL cannot be started here (None: it can)."""
    if postgres_bin() is None:
        return "PostgreSQL is not installed (Debian's package 'postgresql'; .ci/run installs it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a 'postgres' user to run the server as"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throw-away PostgreSQL cluster: initdb at creation, start()/stop() as often as a test needs, close()."""

    def __init__(self, user: str = "attn"):
        self.bin, self.user = postgres_bin(), user
        self.root = Path(tempfile.mkdtemp(prefix="attn_pg_"))
        self.data, self.sockets, self.log = self.root / "data", self.root / "sock", self.root / "server.log"
        self.sockets.mkdir()
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:                       # PostgreSQL refuses root: the folder and server are postgres's
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.sockets, "postgres", "postgres")
            os.chmod(self.root, 0o700)
        self._cmd("initdb", "-D", str(self.data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\nunix_socket_directories = "
                    f"'{self.sockets}'\nfsync = off\nmax_connections = 100\n")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/postgres"

    def _cmd(self, tool: str, *args: str, timeout: float = 60) -> None:
        cmd = [str(self.bin / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._cmd("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "start")
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL did not start: {self.log.read_text()[-500:]}")

    def running(self) -> bool:
        """Whether the server accepts connections now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def new_database(self) -> str:
        """A URL of a new, empty database on this server (tests that must not see each other's rows)."""
        import uuid

        import sqlalchemy as sa
        name = "t_" + uuid.uuid4().hex[:12]
        engine = sa.create_engine(self.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        engine.dispose()
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (mode: smart, fast, or immediate: as if killed)."""
        self._cmd("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def close(self) -> None:
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass                                    # not running
        shutil.rmtree(self.root, ignore_errors=True)
