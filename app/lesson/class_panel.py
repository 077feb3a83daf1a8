"""A class in session, the Streamlit side: links (?class=CODE on any page, the teacher's private link), the sidebar's
class panel (start, join, the code and its QR, pacing, "Show this to the class", CSV, end), the follow loop, and the
Lesson page's poll and reveal. Every bit of class state is in the class store (app/lesson/class_store.py); a
session keeps only who it is: a student's seat or the teacher's secret (st.session_state, never sent to a browser
except the student's own seat token in their address bar).
"""
from __future__ import annotations

import io
import json
import time
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import streamlit as st

from app.lesson import class_store as cs
from app.lesson.class_store import ClassEnded, ClassNotFound, ClassState, ClassStoreError, NotTeacher, Seat
from app import url_state
from app.run_log import log_run
from app.text import md_escape

FOLLOW_SECONDS = 1.0           # how often a follower asks whether the teacher moved (the target: within 3 s)
LIVE_SECONDS = 2.0             # how often the teacher's bars are redrawn
WRONG_CODES, WRONG_WINDOW = 5, 60.0     # wrong codes (or teacher links) allowed per session and window (s)
SHOWABLE = {"explorer": "Attention explorer", "how_it_writes": "How it writes"}     # pages the teacher can push
PRIVATE = url_state.PRIVATE    # query parameters never copied into a link
SCREENS = Path(__file__).parent.parent / "screens"
FOLLOW_LOG, LIVE_LOG = "class/follow", "class/live"    # how the follow loop and the teacher's bars log a run
SEAT_COOKIE = "attn_seat_"     # + the class code: this browser's seat in that class (its token), for the join link
SEAT_DAYS = 1                  # how long a browser remembers its seat (a class lasts a lesson)


@st.cache_resource(show_spinner=False)
def _store(url: str) -> cs.ClassStore:
    return cs.ClassStore(url)


def store() -> cs.ClassStore:
    """The class store of this server (a connection pool; the classes themselves are in the database)."""
    return _store(cs.database_url())


def seat() -> Seat | None:
    return st.session_state.get("class_seat")


def secret() -> str | None:
    return st.session_state.get("class_secret")


def _limited() -> bool:
    """True (and a message) when this session typed too many wrong codes lately."""
    recent = [t for t in st.session_state.get("class_wrong", []) if time.time() - t < WRONG_WINDOW]
    st.session_state.class_wrong = recent
    return len(recent) >= WRONG_CODES


def _wrong() -> None:
    st.session_state.setdefault("class_wrong", []).append(time.time())


def _leave(message: str | None = None) -> None:
    if seat() is not None:
        st.session_state.class_cookie = (seat().code, "")       # this browser forgets its seat
    for key in ("class_seat", "class_secret", "class_seen", "class_view_seen"):
        st.session_state.pop(key, None)
    for key in ("class", "seat"):
        if key in st.query_params:
            del st.query_params[key]
    if message:
        st.session_state.class_message = message


def join(code: str, nickname: str = "") -> None:
    """Join a class by its code (a wrong code is counted against this session)."""
    if _limited():
        st.session_state.class_message = "Too many wrong codes: wait a minute, then try again."
        return
    try:
        s = store().join(code, nickname)
    except (ClassNotFound, ClassEnded) as e:
        _wrong()
        st.session_state.class_message = str(e)
        if "class" in st.query_params:                 # a link's wrong code is not tried again on every rerun
            del st.query_params["class"]
        return
    except ClassStoreError as e:
        st.session_state.class_message = str(e)
        return
    st.session_state.update(class_seat=s, class_secret=None, class_message=None)
    st.query_params.update({"class": s.code, "seat": s.token})


def from_link() -> None:
    """Before anything draws the page's link: take a teacher link (?teach=, removed from the address at once) or a
    class link (?class=CODE, and a returning student's ?seat=), and keep a student's class in their address."""
    _this_run.set(None)                               # this run reads the class's state afresh
    wanted_teacher, wanted_class = st.query_params.get("teach"), st.query_params.get("class")
    if wanted_teacher is not None:
        del st.query_params["teach"]                  # never left in the address bar, Copy link or a projector
    if (wanted_teacher or wanted_class) and not cs.classes_enabled():
        st.session_state.class_message = "Classes are turned off on this server."
        if "class" in st.query_params:
            del st.query_params["class"]
        return
    try:
        if wanted_teacher and wanted_teacher != secret():
            if _limited():
                st.session_state.class_message = "Too many wrong links: wait a minute, then try again."
                return
            try:
                state = store().teacher_state(wanted_teacher)
            except NotTeacher:
                _wrong()
                st.session_state.class_message = "This teacher link is not valid (or its class was deleted)."
                return
            _leave()
            st.session_state.update(class_secret=wanted_teacher, class_message=f"You teach class {state.code}.")
            st.query_params["step"] = str(state.step)        # back at the class's step
            return
        mine = seat()
        if wanted_class and not secret() and (mine is None or cs.normal_code(wanted_class) != mine.code):
            if (returning := _returning(cs.normal_code(wanted_class))) is not None:
                st.session_state.update(class_seat=returning, class_message=None)
                st.query_params.update({"class": returning.code, "seat": returning.token})
            else:
                join(wanted_class)
        elif mine is not None and (st.query_params.get("class") != mine.code
                                   or st.query_params.get("seat") != mine.token):
            st.query_params.update({"class": mine.code, "seat": mine.token})    # another page dropped them
    except ClassStoreError as e:
        st.session_state.class_message = str(e)


def seat_cookie(code: str) -> str:
    """The seat token this browser's cookie holds for a class ("" if none), as sent when the session opened."""
    return st.context.cookies.get(SEAT_COOKIE + code, "")


def _returning(code: str) -> Seat | None:
    """The seat this browser already has in the class, if any: the one in its address (a reload, a restart, a tab
    back online), else the one its cookie remembers (the join link opened again on the same device)."""
    for token in (st.query_params.get("seat", ""), seat_cookie(code)):
        if token:
            try:
                store().check_seat(Seat(code, token))
                return Seat(code, token)
            except ClassNotFound:
                pass
    return None


def _remember_seat() -> None:
    """Writes this session's seat (or its forgetting, after Leave) to the browser's cookie, once a session: the
    join link opened again on this device then finds the seat instead of making a second student."""
    mine = seat()
    code, token = (mine.code, mine.token) if mine else st.session_state.get("class_cookie", (None, None))
    if code is None or st.session_state.get("class_cookie_sent") == (code, token):
        return
    st.session_state.class_cookie_sent = st.session_state.class_cookie = (code, token)
    if seat_cookie(code) == token:
        return                                         # the browser sent it with this session already
    age = SEAT_DAYS * 86400 if token else 0
    # code and token are the store's (letters, digits, "-" and "_"): safe in the script; at the sidebar's foot
    st.html(f"<script>document.cookie = '{SEAT_COOKIE}{code}={token}; path=/; max-age={age}; SameSite=Lax';"
            "</script>", unsafe_allow_javascript=True)


_this_run: ContextVar = ContextVar("class_state", default=None)    # (state,) once read in this script run


def current() -> ClassState | None:
    """The state of this session's class (teacher or student), or None; a store failure is said in the panel. Read
    from the store once per script run (the sidebar's panel, then the page; from_link starts each run afresh)."""
    known = _this_run.get()
    if known is not None:
        return known[0]
    state = _read_state()
    _this_run.set((state,))
    return state


def _read_state() -> ClassState | None:
    if not cs.classes_enabled() or not (seat() or secret()):
        return None
    try:
        return store().teacher_state(secret()) if secret() else store().state(seat().code)
    except (ClassNotFound, NotTeacher):
        _leave("This class no longer exists.")
    except ClassStoreError as e:
        st.session_state.class_message = str(e)
    return None


def follows(state: ClassState | None) -> bool:
    """Whether this session follows the teacher now: a student in a teacher-paced class."""
    return state is not None and not state.ended and seat() is not None and state.pacing == "teacher"


def sync(state: ClassState | None, page: str) -> None:
    """A following student goes where the teacher is: the view the teacher pushed, else the lesson's step."""
    if state is None:
        return
    st.session_state.class_seen = state.version
    if not follows(state):
        return
    pushed = json.dumps(state.view, sort_keys=True) if state.view else None
    if pushed != st.session_state.get("class_view_seen"):
        st.session_state.class_view_seen = pushed
        if state.view and state.view.get("page") in SHOWABLE:
            params = _shareable(state.view.get("params", {}))
            st.switch_page(SCREENS / f"{state.view['page']}.py",
                           query_params={**params, "class": seat().code, "seat": seat().token})
    if state.view is None and page != "lesson":
        st.switch_page(SCREENS / "lesson.py", query_params={"step": str(state.step), "class": seat().code,
                                                           "seat": seat().token})


@st.fragment(run_every=FOLLOW_SECONDS)
def _follow(code: str) -> None:
    """Asks the store whether the teacher changed anything (one small query); if so, the whole page follows."""
    if st.session_state.pop("class_just_read", False):
        return                      # drawn by a full run, which read the class's state (and its version) just now
    started = time.perf_counter()
    try:
        version = store().version(code)
    except (ClassStoreError, ClassNotFound):
        return                                         # said on the next full run
    finally:
        log_run(started, FOLLOW_LOG)                   # the benchmark's timer (scripts/bench/bench_class_live.py)
    if version != st.session_state.get("class_seen"):
        st.rerun(scope="app")


@st.fragment(run_every=FOLLOW_SECONDS)
def _until_back() -> None:
    """While the class store cannot be reached, asks again every few seconds; once it answers, the whole page is
    back in the class (the session still holds its seat or the teacher's secret)."""
    try:
        store().check()
    except ClassStoreError:
        return
    st.rerun(scope="app")


def base_url() -> str:
    """The app's address as this browser reached it (scheme and host), for the join link."""
    parts = urlsplit(st.context.url or "http://localhost:8501/")
    return f"{parts.scheme}://{parts.netloc}"


def join_link(code: str) -> str:
    return f"{base_url()}/lesson?{urlencode({'class': code})}"


def qr_png(link: str, scale: int = 12) -> bytes:
    """The join link's QR code as a PNG (segno), black on white with its quiet zone, to scan from the back of a
    room on a projector."""
    import segno
    out = io.BytesIO()
    segno.make(link, error="m").save(out, kind="png", scale=scale, border=4, dark="#000", light="#fff")
    return out.getvalue()


@st.dialog("Join the class", width="large")
def show_code(code: str) -> None:
    """The projector's join screen: the code, large, the link, and the QR code."""
    link = join_link(code)
    left, right = st.columns([1, 1], vertical_alignment="center")
    with left:
        st.markdown(f"<div style='font-size:64px;font-weight:700;letter-spacing:6px'>{code}</div>",
                    unsafe_allow_html=True)          # the code is ours: six letters and digits of ALPHABET
        st.markdown(f"Open **{md_escape(base_url().split('://')[-1])}/lesson** and type the code, or scan the QR code.")
        try:
            st.caption(f"{store().counts(code, 1)[1]} joined so far (the sidebar's Class box keeps count).")
        except (ClassStoreError, ClassNotFound):
            pass
        st.code(link, language=None, wrap_lines=True)
    with right:
        st.image(qr_png(link), width=340)


def _teacher_action(action, *args) -> None:
    """A teacher's action through the store; a refusal or a store failure said in the panel."""
    try:
        action(secret(), *args)
    except (NotTeacher, ClassEnded, ClassStoreError, ValueError) as e:
        st.session_state.class_message = str(e)


def _shareable(params: dict) -> dict:
    """A view's query parameters less the class's own (the code, a seat, the teacher's secret)."""
    return {k: v for k, v in params.items() if k not in PRIVATE + ("class",)}


def _push(page: str) -> None:
    """Shows the teacher's view to the class: the address as it is at the click (the page writes its controls to it
    after the sidebar is drawn, so a view read when the button was drawn could be a change behind)."""
    params = _shareable(st.query_params.to_dict())
    _teacher_action(store().push_view, {"page": page, "params": params})


def _lesson():
    """The app's lesson (a class follows the lesson file of the server, not a file one teacher uploaded)."""
    from app.lesson.steps import load_lesson
    return load_lesson()


def start_class() -> None:
    from app.lesson.steps import LessonError
    try:
        lesson = _lesson()
        code, key = store().create_class(lesson.title, len(lesson.steps), int(st.query_params.get("step", 1) or 1))
    except (ClassStoreError, LessonError, ValueError) as e:
        st.session_state.class_message = str(e)
        return
    _leave()
    st.session_state.update(class_secret=key, class_message=None, class_show_code=code)


def _end() -> None:
    _teacher_action(store().end)


def _csv_button(code: str, key: str, widget: str = "class_csv") -> None:
    """The answers as CSV, made in this run, not on the click (app/file_button.py says why such a file can be lost)."""
    try:
        questions = {i: s.question for i, s in enumerate(_lesson().steps, 1)}
        data = store().answers_csv(key, questions).encode("utf-8")
    except (NotTeacher, ClassStoreError) as e:
        st.caption(f"Answers (CSV) unavailable: {e}")
        return
    st.download_button("Answers (CSV)", data=data, file_name=f"class_{code}.csv", mime="text/csv",
                       icon=":material/download:", on_click="ignore", key=widget)


@st.fragment(run_every=LIVE_SECONDS)
def _live_csv_button(code: str, key: str) -> None:
    """The CSV button of a class in session, remade every few seconds with the answers sent since."""
    _csv_button(code, key)


def sidebar_panel(page: str) -> None:
    """The sidebar's Class box on every page: start or join; the teacher's controls; a student's class."""
    if not cs.classes_enabled():
        return
    state = current()
    with st.sidebar.expander("Class", icon=":material/groups:", expanded=state is not None):
        if message := st.session_state.pop("class_message", None):
            st.info(md_escape(message), icon=":material/info:")
        if state is None:
            _start_or_join()
        elif secret():
            _teacher_box(state, page)
        else:
            _student_box(state)
    if state is not None and not state.ended:
        sync(state, page)
        st.session_state.class_just_read = True        # _follow's first run, inline in this one, need not ask again
        with st.sidebar:
            _follow(state.code)
    elif state is None and (seat() or secret()):       # in a class, its store unreachable now: back when it is
        with st.sidebar:
            _until_back()
    if code := st.session_state.pop("class_show_code", None):
        show_code(code)
    with st.sidebar:
        _remember_seat()


def _start_or_join() -> None:
    try:
        store().check()
    except ClassStoreError as e:
        st.warning(f"Classes are unavailable: {e}", icon=":material/database:")
        return
    st.button("Start a class", icon=":material/co_present:", key="class_start", on_click=start_class,
              width="stretch", help="Students join with a code or a QR code, follow your step and "
                                                    "answer each question; you see their answers live.")
    with st.form("class_join", border=False):
        code = st.text_input("Class code", max_chars=12, placeholder="e.g. K7PM3Q", key="class_join_code")
        nick = st.text_input("Nickname (optional)", max_chars=cs.MAX_NICKNAME, key="class_join_nick",
                             help="Only your teacher sees it, unless they show names to the class.")
        if st.form_submit_button("Join", icon=":material/login:"):
            join(code, nick)
            st.rerun()


def _teacher_box(state: ClassState, page: str) -> None:
    if state.ended:
        st.markdown(f"Class **{state.code}** has ended.")
        _csv_button(state.code, secret(), "class_csv_end")     # the answers are final: made once
        st.button("Close", key="class_close", on_click=_leave)
        return
    try:
        _, joined = store().counts(state.code, state.step)
    except ClassStoreError as e:
        st.warning(str(e))
        return
    st.markdown(f"Class **{state.code}**: {joined} joined")
    st.button("Show the code and QR", icon=":material/qr_code_2:", key="class_qr", width="stretch",
              on_click=lambda: st.session_state.update(class_show_code=state.code))
    with st.popover("Your teacher link (private)", icon=":material/key:", width="stretch"):
        st.caption("Opens these controls in another tab or device. Keep it to yourself: whoever has it can run the "
                   "class. It is not in the join link, the QR code or Copy link.")
        st.code(f"{base_url()}/lesson?{urlencode({'teach': secret()})}", language=None, wrap_lines=True)
    st.toggle("Students go at their own pace", value=state.pacing == "student", key="class_pacing",
              on_change=lambda: _teacher_action(store().set_pacing, "student" if st.session_state.class_pacing
                                                else "teacher"))
    st.toggle("Show nicknames to the class", value=state.names_on, key="class_names",
              on_change=lambda: _teacher_action(store().set_names, st.session_state.class_names))
    if page in SHOWABLE:
        st.button("Show this to the class", icon=":material/cast:", key="class_push", width="stretch",
                  on_click=_push, args=(page,),
                  help="Every student gets this view (checkpoint, sentence, layer, head), as the pacing says.")
    if state.view:
        st.button("Bring the class back to the lesson", key="class_unpush", width="stretch",
                  on_click=_teacher_action, args=(store().push_view, None))
    _live_csv_button(state.code, secret())
    st.button("End the class", icon=":material/stop_circle:", key="class_end", on_click=_end,
              help=f"Students are told; answers are kept {cs.retention_days():g} days for the CSV, then deleted.")


def _student_box(state: ClassState) -> None:
    if state.ended:
        st.markdown(f"Class **{state.code}** has ended. Thank you!")
        st.button("Leave", key="class_leave", on_click=_leave)
        return
    pace = "You follow the teacher." if state.pacing == "teacher" else "Go at your own pace."
    st.markdown(f"You are in class **{state.code}**. {pace}")
    st.text_input("Nickname (optional)", max_chars=cs.MAX_NICKNAME, key="class_nick", on_change=_rename,
                  help="Only your teacher sees it, unless they show names to the class.")
    if state.view and state.pacing == "student" and state.view.get("page") in SHOWABLE:
        params = _shareable(state.view.get("params", {}))
        if st.button("Open the teacher's view", key="class_open_view", width="stretch"):
            st.switch_page(SCREENS / f"{state.view['page']}.py",
                           query_params={**params, "class": seat().code, "seat": seat().token})
    st.button("Leave the class", key="class_leave", on_click=_leave)


def _rename() -> None:
    try:
        store().set_nickname(seat(), st.session_state.class_nick)
    except (ClassNotFound, ClassEnded, ClassStoreError) as e:
        st.session_state.class_message = str(e)
