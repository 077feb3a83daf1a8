"""The class store: every bit of a live class's state (its code, the teacher's step and pacing, the view pushed to the
class, who joined, every answer, which steps are revealed) in one database, so that a class survives a restart of
the server and several servers can share it. Nothing of a class lives in a process's memory.

One code path (SQLAlchemy Core) for SQLite, the default (a file under the user data folder, or the path in
$ATTN_EXPLORER_CLASS_DB; WAL journal; a write is committed before the call returns), and PostgreSQL (a URL in
$ATTN_EXPLORER_CLASS_DB, e.g. postgresql://user@host/db, through psycopg).

Rights are checked here, for each action: the join code and a student's token give a student's rights (answer,
follow); the teacher's secret (192 random bits, stored only as its SHA-256) is needed to advance, reveal, push a
view, see nicknames, download and end. Text from students is cut to a length and stripped of control characters.
No Streamlit here (app/lesson/class_panel.py is the page side).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import secrets
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.dialects import postgresql, sqlite

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"   # no look-alikes: 0/O, 1/I/L are left out
CODE_LENGTH = 6
MAX_NICKNAME = 24              # characters
MAX_ANSWER = 80                # characters of a short-text answer
MAX_VIEW = 4000                # characters of a pushed view (JSON)
PACINGS = ("teacher", "student")
RETENTION_DAYS = 7.0           # a class and its answers are deleted this long after it ends (server setting below)
ABANDONED_DAYS = 2.0           # ... and a class never ended, this long after it was last changed
ENV_DB, ENV_RETENTION, ENV_CLASSES = "ATTN_EXPLORER_CLASS_DB", "ATTN_EXPLORER_CLASS_RETENTION_DAYS", \
    "ATTN_EXPLORER_CLASSES"

meta = sa.MetaData()
classes = sa.Table(
    "classes", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(CODE_LENGTH), nullable=False, unique=True),
    sa.Column("teacher_hash", sa.String(64), nullable=False, unique=True),   # SHA-256 of the teacher's secret
    sa.Column("lesson", sa.String(200), nullable=False, default=""),        # the lesson's title
    sa.Column("n_steps", sa.Integer, nullable=False),
    sa.Column("step", sa.Integer, nullable=False, default=1),               # the teacher's step, from 1
    sa.Column("pacing", sa.String(10), nullable=False, default="teacher"),
    sa.Column("names_on", sa.Boolean, nullable=False, default=False),
    sa.Column("view", sa.Text, nullable=True),                              # JSON: the view pushed to the class
    sa.Column("version", sa.Integer, nullable=False, default=1),            # +1 on every teacher change
    sa.Column("created_at", sa.Float, nullable=False),                      # seconds since the epoch (UTC)
    sa.Column("changed_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True),
)
students = sa.Table(
    "students", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("token", sa.String(32), nullable=False, unique=True),
    sa.Column("nickname", sa.String(MAX_NICKNAME), nullable=False, default=""),
    sa.Column("joined_at", sa.Float, nullable=False),
)
answers = sa.Table(
    "answers", meta,          # one row per student and step: a flood of answers counts once, the last one
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("student_id", sa.Integer, sa.ForeignKey("students.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("answer", sa.String(MAX_ANSWER), nullable=False),
    sa.Column("answered_at", sa.Float, nullable=False),
)
reveals = sa.Table(
    "reveals", meta,          # a revealed step: its answers are locked
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("revealed_at", sa.Float, nullable=False),
)


class ClassStoreError(RuntimeError):
    """The class database cannot be used (missing, locked, damaged, unreachable), worded for the teacher."""


class ClassNotFound(LookupError):  # noqa: N818 (named for what happened, as LookupError is)
    """No class has this code (or this teacher link)."""


class ClassEnded(LookupError):  # noqa: N818 (named for what happened, as LookupError is)
    """The class of this code has ended."""


class NotTeacher(PermissionError):  # noqa: N818 (named for what happened, as LookupError is)
    """A teacher's action without the teacher's secret."""


class AnswerLocked(ValueError):  # noqa: N818 (named for what happened, as LookupError is)
    """The step's answers are locked: it was revealed."""


@dataclass(frozen=True)
class ClassState:
    """What every follower needs, read in one query: the teacher's step and pacing, the view pushed, revealed steps."""
    code: str
    lesson: str
    n_steps: int
    step: int
    pacing: str
    names_on: bool
    view: dict | None
    version: int
    revealed: frozenset
    ended: bool


@dataclass(frozen=True)
class Seat:
    """A student's place in a class: the class's code and the student's token (their only credential)."""
    code: str
    token: str


def classes_enabled() -> bool:
    """Whether this server offers classes: ATTN_EXPLORER_CLASSES=off (or 0, false, no) turns them off."""
    return os.environ.get(ENV_CLASSES, "on").strip().lower() not in ("off", "0", "false", "no")


def retention_days() -> float:
    """How long an ended class is kept (days): ATTN_EXPLORER_CLASS_RETENTION_DAYS, else 7."""
    try:
        return max(0.0, float(os.environ.get(ENV_RETENTION, RETENTION_DAYS)))
    except ValueError:
        return RETENTION_DAYS


def default_db_path() -> Path:
    """The SQLite file of this computer's classes, under the user data folder."""
    import platformdirs
    return Path(platformdirs.user_data_dir("attention-explorer", appauthor=False)) / "classes.sqlite3"


def database_url(value: str | None = None) -> str:
    """A SQLAlchemy URL from $ATTN_EXPLORER_CLASS_DB (or `value`): a URL as given (postgresql:// gets the psycopg
    driver), else a path to a SQLite file; unset: the file under the user data folder."""
    value = value if value is not None else os.environ.get(ENV_DB, "").strip()
    if "://" in value:
        for plain in ("postgresql://", "postgres://"):
            if value.startswith(plain):
                return "postgresql+psycopg://" + value[len(plain):]
        return value
    path = Path(value).expanduser() if value else default_db_path()
    if not value:
        path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def clean_text(text, limit: int) -> str:
    """Text a student typed, safe to keep and to show: control and format characters (zero-width, bidi overrides)
    removed, runs of white space made one space, cut to `limit` characters."""
    text = "" if text is None else str(text)
    kept = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or not unicodedata.category(ch).startswith("C"))
    return " ".join(kept.split())[:limit]


def normal_code(code) -> str:
    """A typed join code as stored: upper case, spaces and dashes left out, at most 12 characters kept."""
    return "".join(str(code or "").split()).replace("-", "").upper()[:12]


def _hash(secret: str) -> str:
    return hashlib.sha256(str(secret).encode()).hexdigest()


def _now() -> float:
    return time.time()


_engines: dict[str, sa.Engine] = {}     # one connection pool per database URL (no class state: just connections)


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")       # readers never wait for the writer
    cur.execute("PRAGMA synchronous=FULL")       # a commit is on disk before it returns
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.close()


def _engine(url: str) -> sa.Engine:
    if url not in _engines:
        if url.startswith("sqlite"):
            engine = sa.create_engine(url, connect_args={"timeout": 5}, pool_pre_ping=False)
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        else:
            # every statement here is small: one that waits seconds waits on something stuck (a lock, a full pool),
            # and a student's page would wait with it; bounded, it becomes a worded error and the next rerun retries
            engine = sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10, pool_timeout=10,
                                      connect_args={"connect_timeout": 5,
                                                    "options": "-c lock_timeout=5000 -c statement_timeout=15000"})
        _engines[url] = engine
    return _engines[url]


def worded(e: Exception, url: str) -> ClassStoreError:
    """A database failure as a teacher can read it."""
    text = str(getattr(e, "orig", e)).lower()
    where = "the class database" + (f" ({sa.engine.make_url(url).database})" if url.startswith("sqlite") else "")
    if "locked" in text or "busy" in text:
        why = f"{where} is busy: another program holds it locked. Try again in a moment."
    elif "not a database" in text or "malformed" in text or "corrupt" in text:
        why = f"{where} is damaged (not a database any more). Move the file away, or set {ENV_DB} to another one."
    elif "unable to open" in text or "no such file" in text or "readonly" in text or "read-only" in text:
        why = f"{where} cannot be opened or written (its folder is missing or read-only). Set {ENV_DB} to a " \
              "writable file."
    else:
        why = f"{where} cannot be reached ({type(getattr(e, 'orig', e)).__name__}). Classes are unavailable " \
              "until it is back; the rest of the app works."
    return ClassStoreError(why)


class ClassStore:
    """Classes in one database (a SQLAlchemy URL or a SQLite file's path; default: database_url()). Every method is
    one transaction, committed before it returns; ClassStoreError when the database cannot be used."""

    def __init__(self, url: str | None = None):
        self.url = database_url(str(url) if url else None)
        self.engine = _engine(self.url)
        self._ready = False

    # ---- plumbing ----------------------------------------------------------------------------------------

    def _begin(self):
        """A transaction on a database whose tables exist."""
        if not self._ready:
            try:
                meta.create_all(self.engine)
            except exc.IntegrityError:            # another server created them at the same moment
                pass
            except exc.SQLAlchemyError as e:
                raise worded(e, self.url) from e
            self._ready = True
        return self.engine.begin()

    def _run(self, work):
        """work(conn) in one transaction; database failures worded, a lost race on a busy SQLite retried."""
        for attempt in range(3):
            try:
                with self._begin() as conn:
                    return work(conn)
            except exc.OperationalError as e:
                if attempt < 2 and "locked" in str(e.orig).lower():
                    time.sleep(0.05 * (attempt + 1))
                    continue
                raise worded(e, self.url) from e
            except (exc.DBAPIError, exc.TimeoutError) as e:          # TimeoutError: no free connection in 10 s
                raise worded(e, self.url) from e

    def check(self) -> None:
        """ClassStoreError if the database cannot be used now."""
        self._run(lambda conn: conn.execute(sa.select(sa.func.count()).select_from(classes)).scalar())

    def dispose(self) -> None:
        """Close this database's pooled connections (tests, a server restarting)."""
        _engines.pop(self.url, None)
        self.engine.dispose()

    @staticmethod
    def _class(conn, code: str, live: bool = True):
        row = conn.execute(sa.select(classes).where(classes.c.code == normal_code(code))).first()
        if row is None:
            raise ClassNotFound(f"No class has the code {normal_code(code) or '(empty)'}: check it with your "
                                "teacher.")
        if live and row.ended_at is not None:
            raise ClassEnded(f"The class {row.code} has ended.")
        return row

    @staticmethod
    def _teacher(conn, secret: str, live: bool = True):
        row = conn.execute(sa.select(classes).where(classes.c.teacher_hash == _hash(secret or ""))).first()
        if row is None or not secret:
            raise NotTeacher("Only the teacher can do this (their private link opens the class's controls).")
        if live and row.ended_at is not None:
            raise ClassEnded(f"The class {row.code} has ended.")
        return row

    @staticmethod
    def _state(conn, row) -> ClassState:
        shown = conn.execute(sa.select(reveals.c.step).where(reveals.c.class_id == row.id)).scalars()
        return ClassState(row.code, row.lesson, row.n_steps, row.step, row.pacing, bool(row.names_on),
                          json.loads(row.view) if row.view else None, row.version, frozenset(shown),
                          row.ended_at is not None)

    @staticmethod
    def _change(conn, row, **values) -> None:
        conn.execute(sa.update(classes).where(classes.c.id == row.id)
                     .values(version=classes.c.version + 1, changed_at=_now(), **values))

    def _upsert(self, conn, table, keys: list, values: dict) -> None:
        """Insert a row, or update the one with the same keys (one statement on both databases)."""
        insert = (postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert)(table)
        conn.execute(insert.values(**values).on_conflict_do_update(
            index_elements=keys, set_={k: v for k, v in values.items() if k not in keys}))

    # ---- the teacher ---------------------------------------------------------------------------------------

    def create_class(self, lesson: str, n_steps: int, step: int = 1) -> tuple[str, str]:
        """A new class of a lesson: (its join code, the teacher's secret). Ended classes past their time go first."""
        self.purge()
        secret = secrets.token_urlsafe(24)                         # 192 bits
        for _ in range(20):
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            now = _now()
            try:
                self._run(lambda conn, code=code, now=now: conn.execute(sa.insert(classes).values(
                    code=code, teacher_hash=_hash(secret), lesson=clean_text(lesson, 200), n_steps=int(n_steps),
                    step=min(max(int(step), 1), int(n_steps)), pacing="teacher", names_on=False, version=1,
                    created_at=now, changed_at=now)))
                return code, secret
            except exc.IntegrityError:
                continue                                       # a code in use: draw another
        raise ClassStoreError("Could not find a free class code; try again.")

    def teacher_state(self, secret: str) -> ClassState:
        """The class this secret controls (NotTeacher if none; an ended one too, to download its answers)."""
        return self._run(lambda conn: self._state(conn, self._teacher(conn, secret, live=False)))

    def set_step(self, secret: str, step: int) -> None:
        def work(conn):
            row = self._teacher(conn, secret)
            self._change(conn, row, step=min(max(int(step), 1), row.n_steps), view=None)
        self._run(work)

    def set_pacing(self, secret: str, pacing: str) -> None:
        if pacing not in PACINGS:
            raise ValueError(f"pacing is one of {', '.join(PACINGS)}, not {pacing!r}")
        self._run(lambda conn: self._change(conn, self._teacher(conn, secret), pacing=pacing))

    def set_names(self, secret: str, on: bool) -> None:
        self._run(lambda conn: self._change(conn, self._teacher(conn, secret), names_on=bool(on)))

    def push_view(self, secret: str, view: dict | None) -> None:
        """Show the class a view of another page ({"page": ..., "params": {...}}); None: back to the lesson."""
        text = None if view is None else json.dumps(view, sort_keys=True)
        if text is not None and len(text) > MAX_VIEW:
            raise ValueError("This view is too large to send to the class (its sentence is too long).")
        self._run(lambda conn: self._change(conn, self._teacher(conn, secret), view=text))

    def reveal(self, secret: str, step: int) -> None:
        """Lock the step's answers and let the class see the model's answer."""
        def work(conn):
            row = self._teacher(conn, secret)
            if not 1 <= int(step) <= row.n_steps:
                raise ValueError(f"this lesson has steps 1 to {row.n_steps}")
            self._upsert(conn, reveals, ["class_id", "step"],
                         {"class_id": row.id, "step": int(step), "revealed_at": _now()})
            self._change(conn, row)
        self._run(work)

    def tally(self, secret: str, step: int) -> dict[str, int]:
        """How many students gave each answer to a step, most given first."""
        def work(conn):
            row = self._teacher(conn, secret, live=False)
            q = (sa.select(answers.c.answer, sa.func.count()).where(answers.c.class_id == row.id,
                                                                    answers.c.step == int(step))
                 .group_by(answers.c.answer).order_by(sa.func.count().desc(), answers.c.answer))
            return {a: n for a, n in conn.execute(q)}
        return self._run(work)

    def nicknames(self, secret: str) -> list[str]:
        """The nicknames students gave (teacher only), in the order they joined."""
        def work(conn):
            row = self._teacher(conn, secret, live=False)
            q = sa.select(students.c.nickname).where(students.c.class_id == row.id, students.c.nickname != "")
            return list(conn.execute(q.order_by(students.c.id)).scalars())
        return self._run(work)

    def answers_csv(self, secret: str, questions: dict[int, str] | None = None) -> str:
        """Every answer as CSV: step, question, answer, time (UTC, ISO 8601), and the nickname if one was given."""
        def work(conn):
            row = self._teacher(conn, secret, live=False)
            q = (sa.select(answers.c.step, answers.c.answer, answers.c.answered_at, students.c.nickname)
                 .join(students, students.c.id == answers.c.student_id).where(answers.c.class_id == row.id)
                 .order_by(answers.c.step, answers.c.answered_at))
            return list(conn.execute(q))
        rows = self._run(work)
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(["step", "question", "answer", "time", "nickname"])
        for step, answer, at, nick in rows:
            w.writerow([step, (questions or {}).get(step, ""), _csv_safe(answer),
                        datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds"), _csv_safe(nick)])
        return out.getvalue()

    def end(self, secret: str) -> None:
        """End the class: students are told, nothing more is accepted; it is deleted after retention_days()."""
        def work(conn):
            row = self._teacher(conn, secret, live=False)
            if row.ended_at is None:
                self._change(conn, row, ended_at=_now())
        self._run(work)

    def purge(self, now: float | None = None) -> int:
        """Delete the classes ended more than retention_days() ago (and those left unchanged for ABANDONED_DAYS
        beyond that), with their students and answers; returns how many."""
        now = _now() if now is None else now
        ended = now - retention_days() * 86400
        abandoned = now - (retention_days() + ABANDONED_DAYS) * 86400

        def work(conn):
            ids = list(conn.execute(sa.select(classes.c.id).where(
                sa.or_(classes.c.ended_at < ended, classes.c.changed_at < abandoned))).scalars())
            if ids:                      # children first: SQLite enforces foreign keys only with the pragma
                for table in (answers, reveals):
                    conn.execute(sa.delete(table).where(table.c.class_id.in_(ids)))
                conn.execute(sa.delete(students).where(students.c.class_id.in_(ids)))
                conn.execute(sa.delete(classes).where(classes.c.id.in_(ids)))
            return len(ids)
        return self._run(work)

    # ---- everyone with the code -----------------------------------------------------------------------------

    def state(self, code: str) -> ClassState:
        """The class's state for a follower (ClassNotFound; an ended class has ended=True)."""
        return self._run(lambda conn: self._state(conn, self._class(conn, code, live=False)))

    def version(self, code: str) -> int:
        """The class's change counter alone: the cheap question a follower asks every few seconds."""
        def work(conn):
            v = conn.execute(sa.select(classes.c.version).where(classes.c.code == normal_code(code))).scalar()
            if v is None:
                raise ClassNotFound(f"No class has the code {normal_code(code)}.")
            return v
        return self._run(work)

    def join(self, code: str, nickname: str = "") -> Seat:
        """A new student in the class (ClassNotFound, ClassEnded): their seat."""
        token = secrets.token_urlsafe(16)

        def work(conn):
            row = self._class(conn, code)
            conn.execute(sa.insert(students).values(class_id=row.id, token=token,
                                                    nickname=clean_text(nickname, MAX_NICKNAME), joined_at=_now()))
            return Seat(row.code, token)
        return self._run(work)

    def set_nickname(self, seat: Seat, nickname: str) -> str:
        """A student's nickname (shown to the class only if the teacher turns names on); returns it as kept."""
        kept = clean_text(nickname, MAX_NICKNAME)

        def work(conn):
            _, sid = self._student(conn, seat)
            conn.execute(sa.update(students).where(students.c.id == sid).values(nickname=kept))
            return kept
        return self._run(work)

    def check_seat(self, seat: Seat) -> ClassState:
        """The class of a student's seat (ClassNotFound if the seat is not in it), e.g. after a restart."""
        return self._run(lambda conn: self._state(conn, self._student(conn, seat, live=False)[0]))

    def _student(self, conn, seat: Seat, live: bool = True):
        row = self._class(conn, seat.code, live)
        sid = conn.execute(sa.select(students.c.id).where(students.c.token == str(seat.token or ""),
                                                          students.c.class_id == row.id)).scalar()
        if sid is None:
            raise ClassNotFound("This seat is not in the class any more: join again with the code.")
        return row, sid

    def answer(self, seat: Seat, step: int, text: str) -> str:
        """A student's answer to a step, replacing their earlier one; AnswerLocked once the step is revealed.
        Returns the answer as kept (cleaned and cut), committed."""
        kept = clean_text(text, MAX_ANSWER)
        if not kept:
            raise ValueError("The answer is empty.")

        def work(conn):
            row, sid = self._student(conn, seat)
            if not 1 <= int(step) <= row.n_steps:
                raise ValueError(f"this lesson has steps 1 to {row.n_steps}")
            locked = conn.execute(sa.select(reveals.c.step).where(reveals.c.class_id == row.id,
                                                                  reveals.c.step == int(step))).first()
            if locked:
                raise AnswerLocked("The answers to this question are closed: the teacher has revealed it.")
            self._upsert(conn, answers, ["student_id", "step"], {"class_id": row.id, "student_id": sid,
                                                                 "step": int(step), "answer": kept,
                                                                 "answered_at": _now()})
            return kept
        return self._run(work)

    def my_answer(self, seat: Seat, step: int) -> str | None:
        """This student's answer to a step, if any."""
        q = (sa.select(answers.c.answer).join(students, students.c.id == answers.c.student_id)
             .join(classes, classes.c.id == students.c.class_id)
             .where(students.c.token == str(seat.token or ""), classes.c.code == normal_code(seat.code),
                    answers.c.step == int(step)))                    # one query: a student's page asks every run
        return self._run(lambda conn: conn.execute(q).scalar())

    def counts(self, code: str, step: int) -> tuple[int, int]:
        """(students who answered this step, students joined)."""
        def work(conn):
            row = self._class(conn, code, live=False)
            joined = conn.execute(sa.select(sa.func.count()).where(students.c.class_id == row.id)).scalar()
            done = conn.execute(sa.select(sa.func.count()).where(answers.c.class_id == row.id,
                                                                 answers.c.step == int(step))).scalar()
            return done, joined
        return self._run(work)

    def class_tally(self, code: str, step: int) -> dict[str, int]:
        """The split of a revealed step's answers, for everyone in the class (NotTeacher before the reveal: the
        class sees its answers beside the model's only then)."""
        def work(conn):
            row = self._class(conn, code, live=False)
            if not conn.execute(sa.select(reveals.c.step).where(reveals.c.class_id == row.id,
                                                                reveals.c.step == int(step))).first():
                raise NotTeacher("The class's answers are shown after the reveal.")
            q = (sa.select(answers.c.answer, sa.func.count()).where(answers.c.class_id == row.id,
                                                                    answers.c.step == int(step))
                 .group_by(answers.c.answer).order_by(sa.func.count().desc(), answers.c.answer))
            return {a: n for a, n in conn.execute(q)}
        return self._run(work)


def _csv_safe(text: str) -> str:
    """A cell a spreadsheet shows as text (not a formula: =, +, -, @ at the start get a quote)."""
    if text and (text[0] in "=+@\t\r" or (text[0] == "-" and not text[1:].replace(".", "", 1).isdigit())):
        return "'" + text
    return text
