"""A process answering for a class is killed (SIGKILL) mid-answer: every answer it had acknowledged is in the
database when a new process opens it, on SQLite and on PostgreSQL (the server side of the same test, with a real
`streamlit run` killed and started again, is tests/browser/test_class_browser.py)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from app.lesson.class_store import ClassStore, Seat

WRITER = r"""
import sys
from app.lesson.class_store import ClassStore, Seat
store = ClassStore(sys.argv[1])
seats = [Seat(sys.argv[2], t) for t in sys.argv[3:]]
i = 0
while True:
    seat = seats[i % len(seats)]
    kept = store.answer(seat, 1 + i % 3, f"answer {i}")
    print(f"{seat.token} {1 + i % 3} {kept}", flush=True)     # acknowledged: committed before this line
    i += 1
"""


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    return request.getfixturevalue("postgres_database")


@pytest.mark.slow
def test_every_acknowledged_answer_survives_a_sigkill(url):
    store = ClassStore(url)
    code, secret = store.create_class("A lesson", 3)
    seats = [store.join(code) for _ in range(4)]
    proc = subprocess.Popen([sys.executable, "-c", WRITER, url, code, *[s.token for s in seats]],
                            stdout=subprocess.PIPE, text=True)
    acknowledged, lines, deadline = {}, 0, time.time() + 60
    while lines < 100 and time.time() < deadline:                   # a hundred answers, then the kill
        token, step, answer = proc.stdout.readline().rstrip("\n").split(" ", 2)
        acknowledged[(token, int(step))] = answer
        lines += 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for line in proc.stdout:                                        # printed before the kill: acknowledged too
        token, step, answer = line.rstrip("\n").split(" ", 2)
        acknowledged[(token, int(step))] = answer
    store.dispose()
    again = ClassStore(url)                                          # as a restarted server opens it
    assert lines == 100 and len(acknowledged) == 12
    for (token, step), answer in acknowledged.items():
        kept = again.my_answer(Seat(code, token), step)
        assert kept is not None
        assert int(kept.split()[1]) >= int(answer.split()[1])        # that answer, or a later one of the same seat
    again.dispose()
