"""app/file_button.py: a click makes the file, a second saves it; a failure is a message."""
from streamlit.testing.v1 import AppTest


def _page():
    import streamlit as st

    from app.file_button import file_button
    made = st.session_state.setdefault("made", [])

    def make():
        made.append(1)
        if st.session_state.get("fail"):
            raise OSError("the disk is full")
        return "hello"

    file_button("Report", make, "report.txt", "text/plain", key="report")
    st.button("Something else", key="other")


def test_nothing_is_made_before_the_click_and_the_saved_file_is_what_make_returned():
    at = AppTest.from_function(_page).run()
    assert at.session_state["made"] == [] and not at.get("download_button")
    at.button(key="report").click().run()
    (save,) = at.get("download_button")
    assert save.proto.label == "Save report.txt" and at.session_state["made"] == [1]
    assert [b.key for b in at.button] == ["other"]              # the save button took the first one's place
    at.button(key="other").click().run()                        # any other change: back to a button that makes
    assert not at.get("download_button") and at.button(key="report")
    assert at.session_state["made"] == [1]


def test_a_failure_is_said_in_the_buttons_place():
    at = AppTest.from_function(_page)
    at.session_state["fail"] = True
    at.run()
    at.button(key="report").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["report.txt could not be made: the disk is full"]
    assert not at.get("download_button")
