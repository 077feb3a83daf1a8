"""Lesson: one guided path through the app for a class, step by step (the steps: app/lesson/lesson.toml, or a file the
teacher uploads). Each step: a short explanation to read aloud, a question for the class, and on "Reveal" the
model's answer drawn by the same builder as the full page (app.lesson.figures, cached by app.lesson.cache).

The step is in the URL (?step=4), so that a teacher can open or share one; every step fits a 1280x720 projector
in presenter mode without scrolling (tests/browser/test_lesson_browser.py measures it).
"""
import time

import streamlit as st

from app import cache
from app.lesson import cache as lesson_cache
from app.lesson import class_step
from app.checkpoints import UNTRAINED
from app.display import show_figure
from app.file_button import file_button
from app.lesson.steps import LessonError, lesson_path, load_lesson, parse_lesson
from app.lesson.figures import FIGURES, toy_config
from app.lesson.handout import handout_html
from app.sidebar import presenter_mode
from app.text import md_escape
from app.lm.common import translation_or_stop

FIGURE_HEIGHT = 540        # px at most, of the figure beside the text (with its download button: a 720 px screen)
UNTRAINED_NOTE = "Untrained model, random attention (trained ones are in the sidebar):"


@st.cache_resource(max_entries=8, show_spinner=False)      # one frozen Lesson shared by every session
def _lesson_file(path: str, version: float):
    try:
        return load_lesson(path), None
    except LessonError as e:
        return None, str(e)


def the_lesson():
    """The lesson uploaded in this session, else the lesson file (read again when it changes); or a message."""
    if st.session_state.get("lesson_text"):
        return parse_lesson(st.session_state.lesson_text, st.session_state.lesson_name)
    path = lesson_path()
    try:
        version = path.stat().st_mtime
    except OSError:
        version = 0.0
    lesson, error = _lesson_file(str(path), version)
    if error:
        st.error(error, icon=":material/error:")
        st.stop()
    return lesson


def step_number(n_steps: int) -> int:
    """The step of the URL (?step=N, counted from 1), within the lesson; the URL is set to it."""
    raw = st.query_params.get("step", "1")
    try:
        n = int(raw)
    except ValueError:
        n = 1
    if not 1 <= n <= n_steps:
        st.toast(f"This lesson has steps 1 to {n_steps}: showing step {min(max(n, 1), n_steps)}.",
                 duration="long")                    # a link's notice, as in app/url_state.py: 10 s to read it
        n = min(max(n, 1), n_steps)
    if st.query_params.get("step") != str(n):
        st.query_params["step"] = str(n)
    return n


def go_to(n: int) -> None:
    st.query_params["step"] = str(n)
    class_step.teacher_moved(n)                       # in a class the teacher leads: the students follow


def reveal(step_id: tuple) -> None:
    st.session_state.setdefault("lesson_revealed", set()).add(step_id)
    class_step.teacher_revealed(step_id[2])


def upload() -> None:
    """A teacher's own lesson file: used in this session when it reads, else its message below the uploader."""
    file = st.session_state.get("lesson_upload")
    if file is None:
        return
    text = file.getvalue().decode("utf-8", errors="replace")
    try:
        parse_lesson(text, file.name)
    except LessonError as e:
        st.session_state.lesson_upload_error = str(e)
        return
    st.session_state.update(lesson_text=text, lesson_name=file.name, lesson_upload_error=None)
    go_to(1)


def lesson_menu(lesson, n: int, key, following: bool = False) -> None:
    """The popover of the whole lesson, labelled "n / N": jump to a step, the handout, and another lesson file. A
    student following the teacher sees the steps only: the teacher leads, and the handout holds every answer."""
    with st.popover(f"{n} / {len(lesson.steps)}", icon=":material/menu_book:", width="stretch",
                    help="The lesson's steps" + ("" if following else ", its handout, and your own lesson file")):
        st.markdown(f"**{md_escape(lesson.title)}**  \n{md_escape(lesson.about)}")
        if following:                             # one element, not a button a step: the teacher moves the class
            st.markdown("\n".join(f"{i}. " + (f"**{md_escape(s.title)}** (now)" if i == n else md_escape(s.title))
                                   for i, s in enumerate(lesson.steps, 1)))
            st.caption("Your teacher moves the class from step to step.")
            return
        for i, s in enumerate(lesson.steps, 1):
            st.button(f"{i}. {s.title}", key=f"lesson_jump_{i}", on_click=go_to, args=(i,), type="tertiary")
        file_button("Handout: every question and answer (HTML)", icon=":material/description:",
                    make=lambda: handout_html(lesson, key.name, handout_answers(lesson, key)),
                    file_name="lesson_handout.html", mime="text/html", key="lesson_handout",
                    making="Drawing every step's figure (about a minute)…",
                    help="One file with each step's question, the model's figure and its answer, to print or "
                         "share. Drawing the figures takes a minute; then a second click saves it.")
        st.file_uploader("Your own lesson file (.toml)", type=["toml"], key="lesson_upload", on_change=upload,
                         help="Written as app/lesson/lesson.toml is (docs/lesson.md explains it); used in this "
                              "browser tab.")
        if st.session_state.get("lesson_upload_error"):
            st.error(st.session_state.lesson_upload_error)
        if st.session_state.get("lesson_text"):
            st.button("Back to the app's own lesson", key="lesson_default",
                      on_click=lambda: st.session_state.update(lesson_text=None, lesson_upload_error=None))
        st.caption(f"The app's lesson is {lesson_path().name}; the sidebar's Presenter mode enlarges the figures.")


def handout_answers(lesson, key) -> list:
    """(step, what is shown with its question, the model's answer) of every step, for the handout."""
    out = []
    for step in lesson.steps:
        try:
            out.append((step, lesson_cache.before(key, step.figure, step.options, False),
                        lesson_cache.answer(key, step.figure, step.options, False)))
        except ValueError as e:
            out.append((step, None, str(e)))
    return out


def header(lesson, n: int, key, following: bool = False) -> None:
    """The step's title, Previous / Next (the teacher's alone when a student follows), and the lesson menu
    (labelled with the step number), in one row."""
    title, prev, nxt, menu = st.columns([6.2, 1.7, 1.4, 1.4], vertical_alignment="center")
    title.subheader(f"{n}. {md_escape(lesson.steps[n - 1].title)}", anchor=False)
    prev.button("Previous", icon=":material/arrow_back:", disabled=n == 1 or following, on_click=go_to,
                args=(n - 1,), width="stretch", key="lesson_prev")
    nxt.button("Next", icon=":material/arrow_forward:", disabled=n == len(lesson.steps) or following, on_click=go_to,
               args=(n + 1,), width="stretch", key="lesson_next", type="primary")
    with menu:
        lesson_menu(lesson, n, key, following)


def wait_for_toy(step) -> None:
    """The tiny model trains in the background from the moment the lesson opens; if it has not finished, a progress
    bar until it has."""
    cfg = toy_config(step.options)
    run = lesson_cache.toy_run(cfg)
    bar = None
    while run.running:
        snapshots, _, _ = run.view()
        done = snapshots[-1].step if snapshots else 0
        text = f"The tiny model is still learning: step {done} of {cfg.steps}…"
        bar = bar.progress(done / cfg.steps, text=text) if bar else st.progress(done / cfg.steps, text=text)
        time.sleep(0.5)
    if bar:
        bar.empty()


def notes(step) -> None:
    """The teacher's notes, collapsed: what to say, the common misconception, where to go deeper."""
    with st.expander("Teacher notes", icon=":material/school:"):
        if step.answer:
            st.markdown(f"**After the reveal:** {step.answer}")
        if step.notes.say:
            st.markdown(f"**Say:** {step.notes.say}")
        if step.notes.misconception:
            st.markdown(f"**Common misconception:** {step.notes.misconception}")
        page = FIGURES[step.figure].page
        st.page_link(f"screens/{page}", label="Go deeper: the full page", icon=":material/open_in_new:")
        if step.notes.deeper:
            st.caption(step.notes.deeper)


def the_step(lesson, n: int, key, room=None) -> None:
    """Explanation, question, Reveal, the answer and the notes on the left; the model's figure on the right. In a
    class (room: its state), a student answers under the question and sees the answer when the teacher reveals
    it; the teacher sees the answers come in, and after the reveal the class beside the model."""
    step = lesson.steps[n - 1]
    kind, presenter = FIGURES[step.figure], presenter_mode()
    step_id = (lesson.source, lesson.title, n)
    student = class_step.in_class(room) and not class_step.secret()
    shown = (n in room.revealed) if student else step_id in st.session_state.get("lesson_revealed", set())
    height = FIGURE_HEIGHT
    left, right = st.columns([2, 3], gap="medium")
    try:
        before = lesson_cache.before(key, step.figure, step.options, presenter, height)
    except ValueError as e:
        left.warning(f"This step cannot be drawn on this model: {e}")
        return
    with left:
        st.markdown(step.explain)
        if before.text:
            st.markdown(before.text)
        st.info(f"**Ask the class:** {step.question}", icon=":material/help:")
        if class_step.in_class(room):
            class_step.poll(step, n, room)
            class_step.live(step, n, room)
        if not shown and not student:
            st.button("Reveal the model's answer", icon=":material/visibility:", type="primary", key="lesson_reveal",
                      on_click=reveal, args=(step_id,))
        answer_place = st.container()
        if not student:                               # a student would read the answer in them before the reveal
            notes(step)
    with right:
        if not shown:
            if before.fig is not None:
                show_figure(before.fig, f"lesson_step{n}_before", key=f"lesson_before_{n}", styled=True)
            else:
                with st.container(border=True, height=height, vertical_alignment="center"):
                    st.caption("The model's answer appears here on **Reveal**.")
            return
        if step.figure == "watch_it_learn":
            wait_for_toy(step)
        try:
            answer = lesson_cache.answer(key, step.figure, step.options, presenter, height)
        except ValueError as e:
            st.warning(f"The model cannot answer this one: {e}")
            return
        together = class_step.beside(step, n, room, answer) if class_step.in_class(room) else None
        if together is None:
            show_figure(answer.fig, f"lesson_step{n}_{step.figure}", key=f"lesson_answer_{n}", styled=True)
        else:
            with_class, model_only = st.tabs(["The class and the model", "The model's figure"])
            with with_class:
                show_figure(together, f"lesson_step{n}_class", key=f"lesson_class_{n}", styled=True)
            with model_only:
                show_figure(answer.fig, f"lesson_step{n}_{step.figure}", key=f"lesson_answer_{n}", styled=True)
    with answer_place:
        if kind.learned and key.name == UNTRAINED:        # said with the answer: no room for two boxes
            st.warning(f"**{UNTRAINED_NOTE}** {answer.fact}", icon=":material/warning:")
        else:
            st.success(answer.fact, icon=":material/lightbulb:")


def start_toy_runs(lesson) -> None:
    """The tiny model of a "Watch it learn" step starts learning when the lesson opens, to be ready by then."""
    for s in lesson.steps:
        if s.figure == "watch_it_learn":
            try:
                lesson_cache.toy_run(toy_config(s.options))
            except ValueError:                  # bad digits: the step itself says so
                pass


lesson = the_lesson()
ckpt, lesson_model = cache.model_or_stop()        # a message and a stop when it cannot be loaded
translation_or_stop("lesson", lesson_model)        # a language model: one line why not
start_toy_runs(lesson)
room = class_step.state()              # the class this session is in, if any (app/lesson/class_panel.py)
class_step.follow_step(room)
number = step_number(len(lesson.steps))
header(lesson, number, ckpt, class_step.locked(room))
the_step(lesson, number, ckpt, room)
