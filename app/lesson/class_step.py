"""A Lesson step in a class: the step a follower is shown, the teacher's moves and reveals written to the class
store, a student's poll, the teacher's live bars, and after the reveal the class beside the model
(app.figures.classroom). Called by app/screens/lesson.py; who may do what is checked again by the store.
"""
from __future__ import annotations

import time

import streamlit as st

from app.figures import classroom
from app.lesson import class_panel
from app.lesson.class_panel import secret, seat, store
from app.lesson.class_store import AnswerLocked, ClassEnded, ClassNotFound, ClassState, ClassStoreError, NotTeacher
from app.run_log import log_run
from app.lesson.polls import KINDS, check_answer, sentence_words, step_sentence
from app.text import md_escape

LIVE_HEIGHT = 230        # px of the teacher's live bars under the question (a 720 px projector)
# A poll's options wrap onto more lines in the Lesson's narrow text column, at any window size: Streamlit draws
# pills as one row that scrolls sideways with no sign of more (app.page_header wraps them below 576 px only), and
# an option longer than the column wraps inside its pill rather than being cut
POLL_CSS = """
[class*="st-key-class_answer_"] { max-width: 100%; }
[class*="st-key-class_answer_"] [role="radiogroup"] { flex-wrap: wrap; overflow-x: visible; }
[class*="st-key-class_answer_"] [role="radiogroup"] button { max-width: 100%; height: auto; }
[class*="st-key-class_answer_"] [role="radiogroup"] button p { white-space: normal; text-align: left; }
"""


def state() -> ClassState | None:
    return class_panel.current()


def follow_step(s: ClassState | None) -> None:
    """A student following the teacher is on the teacher's step (the URL says so before the page reads it); so is
    each of the teacher's tabs when the step was changed in another one."""
    if s is None or s.ended:
        return
    if secret():
        if st.session_state.get("class_teacher_step") != s.step:
            st.session_state.class_teacher_step = s.step
            st.query_params["step"] = str(s.step)
    elif class_panel.follows(s) and st.query_params.get("step") != str(s.step):
        st.query_params["step"] = str(s.step)


def locked(s: ClassState | None) -> bool:
    """Whether Previous and Next are the teacher's alone for this session."""
    return class_panel.follows(s)


def teacher_moved(n: int) -> None:
    if secret():
        class_panel._teacher_action(store().set_step, n)


def teacher_revealed(n: int) -> None:
    if secret():
        class_panel._teacher_action(store().reveal, n)


def in_class(s: ClassState | None) -> bool:
    return s is not None and not s.ended


def words_of(step) -> list[str] | None:
    sentence = step_sentence(step.figure, step.options)
    return sentence_words(sentence) if sentence else None


def _send(step, n: int, key: str, words) -> None:
    """A student's answer, checked and committed before it is called accepted."""
    value = st.session_state.get(key)
    if value is None:
        return
    try:
        kept = store().answer(seat(), n, check_answer(step.poll, value, words))
        st.session_state[f"class_sent_{n}"] = kept
        st.session_state.class_poll_message = None
    except (ValueError, AnswerLocked, ClassEnded, ClassNotFound, ClassStoreError) as e:
        st.session_state.class_poll_message = str(e)


def poll(step, n: int, s: ClassState) -> None:
    """A student's answer to the step: tap an option or a word, or type a number or a few words."""
    if seat() is None or not in_class(s):
        return
    try:
        mine = store().my_answer(seat(), n)
    except (ClassNotFound, ClassStoreError) as e:
        st.warning(str(e))
        return
    if n in s.revealed:
        st.caption(f"Answers are closed. Yours: {md_escape(mine)}" if mine else "Answers are closed.")
        return
    kind, key = step.poll.kind, f"class_answer_{n}"
    words = words_of(step) if kind == "word" else None
    if kind == "choice" or (kind == "word" and words):
        options = step.poll.choices if kind == "choice" else words
        st.html(f"<style>{POLL_CSS}</style>")          # style only: it takes no room on the page
        st.pills("Your answer" if kind == "choice" else "Tap a word", options, key=key, on_change=_send,
                 args=(step, n, key, words))
    else:
        with st.form(f"class_form_{n}", border=False, enter_to_submit=True):
            st.text_input("Your answer", key=key, max_chars=40, placeholder=KINDS[kind if kind != "word" else "text"],
                          label_visibility="collapsed")
            st.form_submit_button("Send", icon=":material/send:", on_click=_send, args=(step, n, key, None))
    if message := st.session_state.pop("class_poll_message", None):
        st.error(md_escape(message))
    elif mine:
        st.success(f"Sent: **{md_escape(mine)}**. You may change it until the reveal.", icon=":material/check:")


def live(step, n: int, s: ClassState) -> None:
    """The teacher's view of the answers, redrawn every few seconds: answered of joined, and the bars."""
    if not secret() or not in_class(s) or n in s.revealed:
        return
    _live(n, step.poll.choices, s.code, s.names_on)


@st.fragment(run_every=class_panel.LIVE_SECONDS)
def _live(n: int, choices: tuple, code: str, names_on: bool) -> None:
    started = time.perf_counter()
    try:
        _live_bars(n, choices, code, names_on)
    finally:
        log_run(started, class_panel.LIVE_LOG)


def _live_bars(n: int, choices: tuple, code: str, names_on: bool) -> None:
    try:
        counts = store().tally(secret(), n)
        done, joined = store().counts(code, n)
        names = store().nicknames(secret()) if names_on else []
    except (NotTeacher, ClassStoreError) as e:
        st.warning(str(e))
        return
    st.markdown(f"**{done} of {joined}** answered" + (f": {md_escape(', '.join(names))}" if names else ""))
    if counts or choices:
        st.plotly_chart(classroom.live_bars(counts, choices, height=LIVE_HEIGHT), theme=None,
                        config={"staticPlot": True}, key=f"class_live_{n}")


def beside(step, n: int, s: ClassState, answer):
    """After the reveal, the class beside the model: a figure, or None when no one answered."""
    try:
        counts = store().tally(secret(), n) if secret() else store().class_tally(s.code, n)
    except (NotTeacher, ClassStoreError):
        return None
    if not counts:
        return None
    data = getattr(answer, "for_class", None) or {}
    if step.poll.kind == "word" and "words" in data:
        return classroom.class_beside_attention(data["words"], data["weights"], counts, data["head"])
    if "labels" in data:
        return classroom.class_beside_probabilities(data["labels"], data["probs"], counts)
    if step.poll.kind == "choice":
        if "choice" in data:
            return classroom.class_split_beside_choice(step.poll.choices, counts,
                                                       classroom.matching_choice(step.poll.choices, data["choice"]))
        return classroom.class_split_beside_choice(step.poll.choices, counts, step.poll.expected or None,
                                                   who="the lesson")
    return classroom.live_bars(counts)
