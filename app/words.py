"""Whole words or the model's pieces: the switch of every attention map that offers both (on until switched off: a
class reads words), and the sentence that says what merging does. The merging itself is core.views.attention_view
(words=True)."""
import streamlit as st

WORDS_NOTE = ("Whole words: the attention a word receives is the sum over its pieces, the attention it pays is the "
              "mean over its pieces, so rows still add up to 1.")
PIECES_NOTE = "Subword pieces: ▁ marks a piece that starts a word."


def words_toggle(where, key: str) -> bool:
    """The "Whole words" toggle in `where` (st, a column or a row), on until someone switches it off."""
    st.session_state.setdefault(key, True)
    return where.toggle("Whole words", key=key,
                        help="On: each word is one row and column, as a class reads it. Off: the model's own subword "
                             "pieces.")


def words_note(words: bool) -> str:
    """What the map's rows and columns are: WORDS_NOTE or PIECES_NOTE."""
    return WORDS_NOTE if words else PIECES_NOTE
