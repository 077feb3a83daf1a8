"""app.words: the "Whole words" switch starts on (a class reads words), keeps a student's choice, and its note says
what the map's rows and columns are. The pages that use it: tests/app/screens/test_explorer.py, test_pages.py."""
from streamlit.testing.v1 import AppTest

from app.words import PIECES_NOTE, WORDS_NOTE


def page():
    import streamlit as st

    from app.words import words_note, words_toggle
    st.caption(words_note(words_toggle(st, "some_map_words")))


def test_the_switch_starts_on_words_and_keeps_a_choice():
    at = AppTest.from_function(page).run()
    assert at.toggle(key="some_map_words").value is True and at.caption[0].value == WORDS_NOTE
    at.toggle(key="some_map_words").set_value(False).run()
    assert at.caption[0].value == PIECES_NOTE
    at.run()
    assert at.toggle(key="some_map_words").value is False                     # a rerun keeps the choice
