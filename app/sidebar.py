"""The sidebar of every page: the checkpoint picker, the picked checkpoint's card in a few captions, and the
presenter switch; and, since app/main.py calls it on every rerun of every page, the pages' compact header."""
from __future__ import annotations

import streamlit as st

from app import cache
from app.checkpoints import UNTRAINED, checkpoint_names, preferred_checkpoint
from app.demo import DOMAINS, domain
from app.page_header import compact_header
from core import CheckpointError


def presenter_mode() -> bool:
    """Whether the sidebar's presenter switch is on (bigger type for a projector)."""
    return bool(st.session_state.get("presenter"))


def _picked() -> None:
    st.session_state.checkpoint_picked = True


def sidebar(prefer_domain: str | None = None) -> None:
    """Checkpoint picker, its card and the presenter switch; a broken checkpoint shows a message and the others
    stay pickable. Until someone picks a checkpoint, a page with a prefer_domain gets a checkpoint of that domain.
    The picked checkpoint's version is looked up here, once for the rerun (app.cache.pin_checkpoint)."""
    compact_header()
    names = checkpoint_names()
    if not st.session_state.get("checkpoint_picked") or st.session_state.get("checkpoint") not in names:
        st.session_state.checkpoint = preferred_checkpoint(names, prefer_domain)
    with st.sidebar:
        st.toggle("Presenter mode", key="presenter",
                  help="Larger text in every figure, to read it from the back of a room on a projector. "
                       "For the page's own text, zoom the browser (Ctrl and +).")
        name = st.selectbox("Checkpoint", names, key="checkpoint", on_change=_picked,
                            help="Models in the checkpoints/ folder. Pick another if one fails to load.")
        try:
            model = cache.load_model(cache.pin_checkpoint(name))
        except CheckpointError as e:
            st.error(f"This checkpoint cannot be loaded: {e}\n\nPick another one above.")
            return
        card_captions(name, model)


def card_captions(name: str, model) -> None:
    """What the sidebar says of the loaded model: untrained or imported, its sizes, its data, its test scores."""
    card = model.card
    if name == UNTRAINED:
        st.warning("No trained checkpoint is loaded: this model is freshly initialised, "
                   "so its attention patterns are random.")
    elif not card.trained_here:
        st.info(f"Imported, not trained here: {card.source or 'see its card'}.")
    cfg = model.cfg
    st.caption(f"N={cfg.N} encoder / {cfg.N_dec} decoder layers, h={cfg.h} heads, d_model={cfg.d_model}")
    if name != UNTRAINED:
        st.caption(f"Trained on {DOMAINS[domain(card)][0]}: it translates such sentences best.")
    if card.test:
        st.caption("Test: " + ", ".join(f"{k} {v}" for k, v in card.test.items() if isinstance(v, (int, float))))
