"""A download whose file takes seconds to make: one click makes it, a second saves it.

Why not Streamlit's own deferred download (st.download_button with a callable as data)? The file it makes is
referenced by no session, and Streamlit deletes such files after any two script runs of any session: on a server
where a class follows the teacher (several runs a second) the file is often gone before the browser fetches it,
and the student sees "canceled". A file made in a run belongs to that run's session until its next full rerun.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import streamlit as st

_LOG = logging.getLogger(__name__)


def file_button(label: str, make: Callable[[], bytes | str], file_name: str, mime: str, key: str, *,
                making: str = "Making the file…", save_label: str | None = None, help: str | None = None,
                icon: str | None = None) -> None:
    """A button that runs make() and puts, in its own place, a button that saves what it made (save_label, or
    "Save" and the file's name)."""
    slot = st.empty()
    if not slot.button(label, key=key, help=help, icon=icon):
        return
    try:
        with st.spinner(making):
            data = make()
    except Exception as e:                              # noqa: BLE001 - any failure becomes a message, not a trace
        _LOG.exception("making %s failed", file_name)
        slot.error(f"{file_name} could not be made: {e}", icon=":material/error:")
        return
    slot.download_button(save_label or f"Save {file_name}", data=data, file_name=file_name, mime=mime,
                         key=f"{key}:save", icon=":material/download:", type="primary", on_click="ignore",
                         help="Made just now; it stays on offer until you change something on the page.")
