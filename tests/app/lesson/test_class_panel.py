"""app/lesson/class_panel.py and class_step.py through app/main.py with AppTest: a teacher starts a class, a student
joins by its link and follows the teacher's step, answers, and sees the class beside the model after the reveal; the
teacher's secret never reaches the student nor the address bar; a student cannot act as the teacher; wrong codes are
rate-limited; a broken database leaves the rest of the app working; classes can be turned off."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from app.lesson.class_store import ClassStore
from core.paths import REPO
from tests.helpers import FIXTURES

MAIN = str(REPO / "app" / "main.py")
SHORT = (FIXTURES / "lesson" / "short.toml").read_text(encoding="utf-8")
LESSON = SHORT.replace('question = "Which key gets the most?"\n', 'question = "Which key gets the most?"\n'
                       'poll = "choice"\nchoices = ["Key 1", "Key 2", "Key 3"]\nexpected = "Key 1"\n')


@pytest.fixture
def page(tmp_path, monkeypatch):
    """page(**query) -> a new browser tab on the Lesson page (a fresh session), run once."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "lesson.toml").write_text(LESSON, encoding="utf-8")
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("ATTN_EXPLORER_LESSON", str(tmp_path / "lesson.toml"))
    monkeypatch.setenv("ATTN_EXPLORER_CLASS_DB", str(tmp_path / "classes.sqlite3"))

    def open_tab(**query) -> AppTest:
        at = AppTest.from_file(MAIN, default_timeout=300)
        at.switch_page("screens/lesson.py")
        for k, v in query.items():
            at.query_params[k] = v
        return ok(at.run())
    return open_tab


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def texts(at: AppTest) -> str:
    """Everything the session was sent as text (markdown, alerts, code blocks, captions), to search."""
    parts = [e.value for kind in ("markdown", "info", "success", "warning", "error", "caption", "code", "subheader")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def start(page):
    teacher = page()
    ok(button(teacher, "class_start").click().run())
    code = re.search(r"Class \*\*(\w{6})\*\*", texts(teacher)).group(1)
    secret = re.search(r"teach=([\w-]+)", texts(teacher)).group(1)
    return teacher, code, secret


@pytest.mark.slow
def test_a_student_joins_by_link_follows_answers_and_sees_the_class_beside_the_model(page):
    teacher, code, secret = start(page)
    assert "teach" not in teacher.query_params and len(secret) >= 32
    student = page(**{"class": code})
    assert f"You are in class **{code}**" in texts(student)
    assert secret not in texts(student) and "teach" not in str(dict(student.query_params))
    assert button(student, "lesson_next").disabled and not any(b.key == "lesson_reveal" for b in student.button)
    (choice,) = student.get("button_group")
    assert choice.options == ["Key 1", "Key 2", "Key 3"]
    ok(choice.set_value("Key 2").run())
    assert "Sent: **Key 2**" in texts(student)
    ok(teacher.run())
    assert "**1 of 1** answered" in texts(teacher)
    ok(button(teacher, "lesson_reveal").click().run())
    ok(student.run())                                    # the follow loop's rerun
    assert "Answers are closed. Yours: Key 2" in texts(student)
    tabs = [t.label for t in student.tabs]
    assert tabs == ["The class and the model", "The model's figure"]
    ok(button(teacher, "lesson_next").click().run())
    assert ClassStore().state(code).step == 2
    ok(student.run())
    assert student.subheader[0].value.startswith("2.") and student.query_params["step"] == "2"


@pytest.mark.slow
def test_a_returning_student_keeps_their_seat_and_a_copied_link_holds_no_seat_or_secret(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    seat = student.query_params["seat"]
    (choice,) = student.get("button_group")
    ok(choice.set_value("Key 3").run())
    again = page(**{"class": code, "seat": seat})                   # a reload, or the server restarted
    assert "Sent: **Key 3**" in texts(again)
    assert ClassStore().counts(code, 1) == (1, 1)
    link = "\n".join(c.value for c in again.get("code"))
    assert seat not in link and secret not in link


@pytest.mark.slow
def test_the_join_link_opened_again_on_the_same_device_finds_the_seat_not_a_second_one(page, monkeypatch):
    from app.lesson import class_panel
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    seat = student.query_params["seat"]
    cookie = "\n".join(h.proto.body for h in student.get("html"))
    assert f"attn_seat_{code}={seat};" in cookie and "max-age=86400" in cookie       # the browser remembers it
    ok(student.get("button_group")[0].set_value("Key 2").run())
    monkeypatch.setattr(class_panel, "seat_cookie", lambda c: seat if c == code else "")
    again = page(**{"class": code})                        # the tab closed; the join link (or QR code) opened again
    assert again.query_params["seat"] == seat and "Sent: **Key 2**" in texts(again)
    ok(teacher.run())
    assert ClassStore().counts(code, 1) == (1, 1) and "1 joined" in texts(teacher)
    ok(button(again, "class_leave").click().run())         # Leave: the browser forgets the seat
    assert f"attn_seat_{code}=; path=/; max-age=0" in "\n".join(h.proto.body for h in again.get("html"))
    monkeypatch.setattr(class_panel, "seat_cookie", lambda c: "")
    other = page(**{"class": code})                        # another device: a second student
    assert other.query_params["seat"] != seat and ClassStore().counts(code, 1) == (1, 2)


@pytest.mark.slow
def test_a_student_cannot_act_as_the_teacher_and_wrong_codes_are_limited(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    for _ in range(5):
        student.query_params["teach"] = "not-the-secret"
        ok(student.run())
    assert "not valid" in texts(student) or "Too many" in texts(student)
    assert not any(b.key in ("class_end", "class_csv", "lesson_reveal") for b in student.button)
    stranger = page()
    # typed codes: submitted through the join form
    for i in range(6):
        stranger.text_input(key="class_join_code").input(f"ZZZZZ{i}")
        ok(stranger.get("button")[[b.label for b in stranger.get("button")].index("Join")].click().run())
    assert "Too many wrong codes" in texts(stranger)


@pytest.mark.slow
def test_the_teachers_link_reopens_the_class_in_another_tab(page):
    _, code, secret = start(page)
    other = page(teach=secret)
    assert f"Class **{code}**" in texts(other) and "teach" not in other.query_params


@pytest.mark.slow
def test_a_damaged_database_is_said_on_the_class_controls_and_the_lesson_works(page, tmp_path):
    (tmp_path / "classes.sqlite3").write_bytes(b"not a database " * 200)
    at = page()
    assert "damaged" in texts(at)
    assert at.subheader[0].value == "1. Weights"                      # the lesson itself is untouched


@pytest.mark.slow
def test_classes_turned_off_leave_no_class_panel(page, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CLASSES", "off")
    at = page(**{"class": "ABCDEF"})
    assert not any(b.key == "class_start" for b in at.button)
    assert "class" not in at.query_params


@pytest.mark.slow
def test_the_teacher_shows_the_explorer_to_the_class_and_brings_it_back(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    teacher.switch_page("screens/explorer.py")
    ok(teacher.run())
    ok(button(teacher, "class_push").click().run())
    assert ClassStore().state(code).view["page"] == "explorer"
    ok(student.run())                                   # the follow loop's rerun takes the student there
    assert "layer" in texts(student).lower() or any(s.key == "layer" for s in student.selectbox)
    assert student.query_params["class"] == code and "seat" in student.query_params
    assert not any(b.key == "lesson_next" for b in student.button)
    ok(button(teacher, "class_unpush").click().run())
    ok(student.run())
    assert any(b.key == "lesson_next" for b in student.button)       # back on the lesson, at the teacher's step


@pytest.mark.slow
def test_the_teacher_shows_how_it_writes_with_its_beam_to_the_class(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    teacher.switch_page("screens/how_it_writes.py")
    ok(teacher.run())
    ok(teacher.selectbox(key="hw_beam").set_value(2).run())
    ok(button(teacher, "class_push").click().run())
    assert ClassStore().state(code).view == {"page": "how_it_writes", "params": dict(teacher.query_params)}
    ok(student.run())
    assert student.selectbox(key="hw_beam").value == 2 and not any(b.key == "lesson_next" for b in student.button)


@pytest.mark.slow
def test_in_a_student_paced_class_students_move_alone_and_open_the_teachers_view_when_they_choose(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    ok(teacher.toggle(key="class_pacing").set_value(True).run())
    assert ClassStore().state(code).pacing == "student"
    ok(student.run())
    assert "Go at your own pace." in texts(student)
    ok(button(student, "lesson_next").click().run())
    assert student.subheader[0].value.startswith("2.") and ClassStore().state(code).step == 1
    teacher.switch_page("screens/explorer.py")
    ok(teacher.run())
    ok(button(teacher, "class_push").click().run())
    ok(student.run())
    assert student.subheader[0].value.startswith("2.")                # not taken there: offered
    ok(button(student, "class_open_view").click().run())
    assert any(s.key == "layer" for s in student.selectbox) and student.query_params["class"] == code


@pytest.mark.slow
def test_a_wrong_code_in_a_link_is_said_and_left_out_of_the_address(page):
    at = page(**{"class": "QQQQQQ"})
    assert "No class has the code QQQQQQ" in texts(at)
    assert "class" not in at.query_params


@pytest.mark.slow
def test_an_ended_class_tells_its_students_and_takes_no_more_answers(page):
    teacher, code, secret = start(page)
    student = page(**{"class": code})
    ok(button(teacher, "class_end").click().run())
    assert f"Class **{code}** has ended" in texts(teacher)
    assert any(b.key == "class_csv_end" for b in teacher.get("download_button"))
    ok(student.run())
    assert "has ended" in texts(student) and not student.get("button_group")
    latecomer = page(**{"class": code})
    assert f"The class {code} has ended" in texts(latecomer)
