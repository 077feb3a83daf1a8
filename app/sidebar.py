"""The sidebar of every page: the checkpoint picker, "Open a Hugging Face model" (app/open_model.py), the picked
checkpoint's card in a few captions, and the presenter switch; and, since app/main.py calls it on every rerun of
every page, the pages' compact header."""
from __future__ import annotations

import streamlit as st

from app import cache, url_state
from app.checkpoints import (FAMILY_WORDS, UNTRAINED, checkpoint_label, checkpoint_names, describe_languages,
                             model_family, preferred_checkpoint)
from core.model.families import DEFAULT
from app.demo import DOMAINS, declared_domain
from app.open_model import open_model_form, pick_opened
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
    link = url_state.checkpoint(names)
    if url_state.restore("sidebar", [link]):                 # a link's checkpoint counts as picked
        st.session_state.checkpoint_picked = True
    pick_opened(names)                                        # a model just opened from Hugging Face
    if not st.session_state.get("checkpoint_picked") or st.session_state.get("checkpoint") not in names:
        st.session_state.checkpoint = preferred_checkpoint(names, prefer_domain)
    with st.sidebar:
        st.toggle("Presenter mode", key="presenter",
                  help="Larger text in every figure, to read it from the back of a room on a projector. "
                       "For the page's own text, zoom the browser (Ctrl and +).")
        name = st.selectbox("Checkpoint", names, key="checkpoint", on_change=_picked, format_func=checkpoint_label,
                            help="Models in the checkpoints/ folder, then those opened from Hugging Face. "
                                 "Pick another if one fails to load.")
        url_state.publish("sidebar", [link])
        open_model_form()
        try:
            model = cache.load_model(cache.pin_checkpoint(name))
        except CheckpointError as e:
            st.error(f"This checkpoint cannot be loaded: {e}\n\nPick another one above.")
            return
        card_captions(name, model)


def card_captions(name: str, model) -> None:
    """What the sidebar says of the loaded model: untrained, or imported (from where, its languages, whom to
    credit), its sizes, its training data as far as its card tells, its test scores."""
    card = model.card
    if name == UNTRAINED:
        st.warning("No trained checkpoint is loaded: this model is freshly initialised, "
                   "so its attention patterns are random.")
    elif is_imported(card):
        st.info(f"Imported, not trained here: {origin(card)}.")
        for line in imported_captions(card):
            st.caption(line)
    st.caption(model_sizes(model))
    if name != UNTRAINED and (line := trained_on(card)):
        st.caption(line)
    if scores := scores_line(card):
        st.caption("Test: " + scores)


def model_sizes(model) -> str:
    """The model's kind and sizes in one caption: encoder and decoder layers, or a language model's one stack."""
    cfg = model.cfg
    family = model_family(model)
    if family == DEFAULT:
        return f"N={cfg.N} encoder / {cfg.N_dec} decoder layers, h={cfg.h} heads, d_model={cfg.d_model}"
    kv = f" sharing {cfg.n_kv} key/value heads" if getattr(cfg, "n_kv", cfg.h) != cfg.h else ""
    return (f"{FAMILY_WORDS[family][0].upper()}{FAMILY_WORDS[family][1:]}: N={cfg.N} layers, h={cfg.h} heads{kv}, "
            f"d_model={cfg.d_model}. It reads a text; the translation pages do not apply to it.")


def _text(value) -> str | None:
    """A card's field as text, or None when it is missing, empty or not text (a hand-edited card)."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def is_imported(card) -> bool:
    """Whether a card is an imported model's (scripts/import_hf.py): not trained here, or naming its source."""
    return not card.trained_here or _text(card.source) is not None


def origin(card) -> str:
    """Where an imported model came from: its card's source, else the folder it was imported from."""
    imported_from = card.extra.get("imported_from")
    folder = _text(imported_from.get("folder")) if isinstance(imported_from, dict) else None
    return _text(card.source) or (f"from the folder {folder}" if folder else "its card does not say where from")


def imported_captions(card) -> list[str]:
    """The languages an imported model's card records and whom it credits (what the card leaves out, left out)."""
    lines = []
    if isinstance(card.extra.get("languages"), dict):
        lines.append(f"Translates {describe_languages(card)}.")
    if credit := _text(card.credit):
        lines.append(f"Credit: {credit.rstrip('.')}.")
    return lines


def trained_on(card) -> str | None:
    """What a model trained here was trained on, as far as its card tells: its demo domain, else its data folder;
    None for an imported model or a card that names neither (no guess from the checkpoint's name)."""
    if is_imported(card):
        return None
    if named := declared_domain(card):
        return f"Trained on {DOMAINS[named][0]}: it translates such sentences best."
    folder = _text(card.data_name)
    return f"Trained on the data in {folder}." if folder else None


def scores_line(card) -> str:
    """'bleu 27.3, chrf 55.1': the numbers of the card's test section ("" when it has none)."""
    test = card.test if isinstance(card.test, dict) else {}
    return ", ".join(f"{k} {v}" for k, v in test.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
