"""What a page does on a language model where it needs a translation model: one line saying why (app.checkpoints'
page_problem), a button that switches to a translation checkpoint when there is one, and a stop."""
from __future__ import annotations

import streamlit as st

from app.checkpoints import checkpoint_label, checkpoint_names, model_family, page_problem, translation_checkpoints


def _switch(name: str) -> None:
    """Before the rerun draws the sidebar: pick `name` (a callback may set the picker's value)."""
    st.session_state.checkpoint = name
    st.session_state.checkpoint_picked = True


def needs_translation(page: str, model, where=st) -> bool:
    """Say in one line why `page` (a key of app.checkpoints.TRANSLATION_ONLY) does not apply to a language model,
    with a button to switch to a translation checkpoint; True when it said so (False: a translation model)."""
    problem = page_problem(page, model.card, model_family(model))
    if not problem:
        return False
    where.info(problem)
    others = [n for n in translation_checkpoints(checkpoint_names())]
    if others:
        where.button(f"Switch to {checkpoint_label(others[0])}", key=f"switch_{page}", on_click=_switch,
                     args=(others[0],), icon=":material/swap_horiz:")
    return True


def translation_or_stop(page: str, model) -> None:
    """needs_translation, then st.stop() when the page does not apply."""
    if needs_translation(page, model):
        st.stop()
