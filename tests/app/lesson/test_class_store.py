"""app/lesson/class_store.py on SQLite and on a real PostgreSQL server: a class is created, joined, followed, answered
and revealed; rights are checked for each action; student text is cleaned; a flood counts once; ended classes are
purged; a missing, locked or damaged database gives a worded ClassStoreError."""
import csv
import io
import sqlite3

import pytest

from app.lesson import class_store as cs
from app.lesson.class_store import (AnswerLocked, ClassEnded, ClassNotFound, ClassStore, ClassStoreError, NotTeacher,
                                    Seat)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    else:
        s = ClassStore(request.getfixturevalue("postgres_database"))
    yield s
    s.dispose()


def test_a_class_is_joined_followed_answered_and_revealed(store):
    code, secret = store.create_class("A lesson", 11)
    assert len(code) == cs.CODE_LENGTH and set(code) <= set(cs.ALPHABET)
    assert len(secret) * 6 >= 128 and secret not in code
    a, b = store.join(code.lower(), "Ann"), store.join(f" {code[:3]}-{code[3:]} ")   # typed loosely
    state = store.state(code)
    assert (state.step, state.pacing, state.revealed, state.ended) == (1, "teacher", frozenset(), False)
    store.set_step(secret, 7)
    assert store.state(code).step == 7 and store.state(code).version > state.version
    assert store.answer(a, 7, "Law") == "Law"
    store.answer(b, 7, "application")
    store.answer(b, 7, "Law")                                           # changed before the reveal
    assert store.tally(secret, 7) == {"Law": 2}
    assert store.counts(code, 7) == (2, 2) and store.my_answer(b, 7) == "Law"
    with pytest.raises(NotTeacher):
        store.class_tally(code, 7)                                       # the class sees its split after the reveal
    store.reveal(secret, 7)
    assert store.state(code).revealed == {7}
    with pytest.raises(AnswerLocked):
        store.answer(a, 7, "its")
    assert store.class_tally(code, 7) == {"Law": 2}
    store.set_pacing(secret, "student")
    store.push_view(secret, {"page": "explorer", "params": {"layer": "5"}})
    assert store.state(code).pacing == "student" and store.state(code).view["params"] == {"layer": "5"}
    store.set_step(secret, 8)                                            # a new step brings the class back
    assert store.state(code).view is None


def test_only_the_teachers_secret_gives_a_teachers_rights(store):
    code, secret = store.create_class("A lesson", 3)
    other_code, other_secret = store.create_class("Another", 3)
    seat = store.join(code)
    near = other_secret[:-1] + ("y" if other_secret.endswith("x") else "x")      # one letter off, never the same
    for wrong in ("", code, seat.token, near, None):
        for action in (lambda s: store.set_step(s, 2), lambda s: store.reveal(s, 1), lambda s: store.end(s),
                       lambda s: store.push_view(s, {"page": "x"}), lambda s: store.nicknames(s),
                       lambda s: store.answers_csv(s), lambda s: store.tally(s, 1),
                       lambda s: store.set_pacing(s, "student")):
            with pytest.raises(NotTeacher):
                action(wrong)
    store.set_step(other_secret, 3)                                       # one class's secret is not another's
    assert store.state(code).step == 1
    with pytest.raises(ClassNotFound):
        store.answer(Seat(other_code, seat.token), 1, "x")                # a seat belongs to its own class
    with pytest.raises(ClassNotFound, match="No class has the code"):
        store.join("ZZZZZ9")


def test_student_text_is_cleaned_cut_and_a_flood_counts_once(store):
    code, secret = store.create_class("A lesson", 2)
    seat = store.join(code, "  <b>Bo\x00b</b>\u202e\u200b" + "x" * 100)
    assert store.nicknames(secret) == [("<b>Bob</b>" + "x" * 100)[:cs.MAX_NICKNAME]]   # kept as text, shown escaped
    assert store.answer(seat, 1, "a\tb\r\n\x07c" + "y" * 500) == ("a b c" + "y" * 500)[:cs.MAX_ANSWER]
    for i in range(50):
        store.answer(seat, 2, f"guess {i}")
    assert store.tally(secret, 2) == {"guess 49": 1} and store.counts(code, 2) == (1, 1)
    with pytest.raises(ValueError, match="empty"):
        store.answer(seat, 1, "\x00 \u200b")
    with pytest.raises(ValueError):
        store.answer(seat, 3, "no such step")


def test_the_csv_has_every_answer_and_names_only_when_given(store):
    code, secret = store.create_class("A lesson", 2)
    named, anonymous = store.join(code, "Ann"), store.join(code)
    store.answer(named, 1, "=HYPERLINK(1)")
    store.answer(anonymous, 2, "-3")
    rows = list(csv.DictReader(io.StringIO(store.answers_csv(secret, {1: "Which word?", 2: "How many?"}))))
    assert [(r["step"], r["question"], r["answer"], r["nickname"]) for r in rows] == [
        ("1", "Which word?", "'=HYPERLINK(1)", "Ann"), ("2", "How many?", "-3", "")]
    assert rows[0]["time"].endswith("+00:00")


def test_an_ended_class_refuses_students_and_is_purged_after_its_time(store, monkeypatch):
    code, secret = store.create_class("A lesson", 2)
    seat = store.join(code)
    store.answer(seat, 1, "kept")
    store.end(secret)
    assert store.state(code).ended
    with pytest.raises(ClassEnded):
        store.join(code)
    with pytest.raises(ClassEnded):
        store.answer(seat, 2, "late")
    with pytest.raises(ClassEnded):
        store.set_step(secret, 2)
    assert "kept" in store.answers_csv(secret)                            # the teacher still downloads
    assert store.purge() == 0                                             # kept for 7 days by default
    monkeypatch.setenv(cs.ENV_RETENTION, "1")
    assert store.purge(cs._now() + 2 * 86400) == 1
    with pytest.raises(ClassNotFound):
        store.state(code)


def test_classes_can_be_turned_off_and_the_database_chosen_by_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(cs.ENV_CLASSES, "off")
    assert not cs.classes_enabled()
    monkeypatch.setenv(cs.ENV_CLASSES, "on")
    assert cs.classes_enabled()
    monkeypatch.setenv(cs.ENV_DB, str(tmp_path / "mine.db"))
    assert cs.database_url() == f"sqlite:///{tmp_path / 'mine.db'}"
    monkeypatch.setenv(cs.ENV_DB, "postgresql://u@h/db")
    assert cs.database_url() == "postgresql+psycopg://u@h/db"
    monkeypatch.delenv(cs.ENV_DB)
    assert cs.database_url().endswith("classes.sqlite3")


def test_a_committed_answer_is_in_the_file_before_the_call_returns(tmp_path):
    path = tmp_path / "c.sqlite3"
    store = ClassStore(f"sqlite:///{path}")
    code, _ = store.create_class("A lesson", 1)
    store.answer(store.join(code), 1, "on disk")
    with sqlite3.connect(path) as other:                                   # another process's view of the file
        assert other.execute("select answer from answers").fetchall() == [("on disk",)]
        assert other.execute("pragma journal_mode").fetchone() == ("wal",)
    store.dispose()


def test_a_damaged_locked_or_missing_database_is_worded(tmp_path):
    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(ClassStoreError, match="damaged"):
        ClassStore(f"sqlite:///{bad}").check()
    with pytest.raises(ClassStoreError, match="cannot be opened"):
        ClassStore(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.sqlite3'}").check()
    locked = ClassStore(f"sqlite:///{tmp_path / 'locked.sqlite3'}")
    code, secret = locked.create_class("A lesson", 2)
    holder = sqlite3.connect(tmp_path / "locked.sqlite3", timeout=0)
    holder.execute("begin exclusive")
    try:
        cs._engines[locked.url].dispose()
        fast = sa_engine_with_timeout(locked.url)
        cs._engines[locked.url] = fast
        locked.engine = fast
        with pytest.raises(ClassStoreError, match="busy"):
            locked.set_step(secret, 2)
    finally:
        holder.rollback()
        holder.close()
    locked.set_step(secret, 2)                                              # free again: works
    assert locked.state(code).step == 2
    locked.dispose()


def sa_engine_with_timeout(url):
    """The store's SQLite engine, waiting 0.2 s instead of 5 for a lock (the test need not wait)."""
    import sqlalchemy as sa

    def pragmas(conn, _):
        conn.execute("PRAGMA busy_timeout=200")
    engine = sa.create_engine(url, connect_args={"timeout": 0.2})
    sa.event.listen(engine, "connect", pragmas)
    return engine


@pytest.mark.slow
def test_postgres_stopped_and_started_keeps_every_accepted_answer(postgres_server):
    store = ClassStore(postgres_server.new_database())
    code, secret = store.create_class("A lesson", 3)
    seats = [store.join(code) for _ in range(5)]
    for i, seat in enumerate(seats):
        store.answer(seat, 1, f"a{i % 2}")
    postgres_server.stop("immediate")                                      # as if the server were killed
    try:
        with pytest.raises(ClassStoreError, match="cannot be reached"):
            store.state(code)
    finally:
        postgres_server.start()
    assert store.tally(secret, 1) == {"a0": 3, "a1": 2}
    store.dispose()
