"""Data a page lacks: the one command that fetches it (core.datasets names it in its messages) and, on a server whose
owner allows it (ATTN_EXPLORER_DATA_DOWNLOADS=on; off by default), a button that fetches it here with a progress
bar (from ATTN_EXPLORER_DATA_MIRROR when set, as get_data.py's --base-url). The research licence of the RWTH
alignments is shown beside the button; pressing it accepts them."""
import os
import threading

import streamlit as st

from core import datasets as ds
from core.download import DownloadError, megabytes

SETTING = "ATTN_EXPLORER_DATA_DOWNLOADS"
LOCK = threading.Lock()                  # one download at a time: a second visitor waits, then finds it in place
MIRROR = "ATTN_EXPLORER_DATA_MIRROR"     # optional: a mirror keeping each file under its host and path (--base-url)


def downloads_allowed() -> bool:
    """Whether this server lets a visitor fetch data from a page (the setting; off unless 'on', '1' or 'true')."""
    return os.environ.get(SETTING, "off").strip().lower() in ("on", "1", "true", "yes")


def missing_parts(bundle: str) -> list:
    return [ds.PARTS[p] for p in ds.BUNDLES[bundle] if not ds.is_installed(ds.PARTS[p])]


def offer_download(bundle: str, key: str, clear=()) -> None:
    """Where the server allows it and the bundle is incomplete: its licences and a button that fetches it with a
    progress bar, then reruns the page (its cached "not there" answers cleared, and the `clear` functions called
    for caches that hold what was computed without the data). Elsewhere nothing: the page's message already names
    the command."""
    parts = missing_parts(bundle)
    if not parts or not downloads_allowed():
        return
    for part in parts:
        if part.licence.must_accept:
            st.caption(f"{part.title}: {part.licence.terms} Pressing the button accepts these terms "
                       f"({part.licence.name}).")
    if not st.button(f"Fetch it here ({ds.bundle_size(bundle)})", key=key):
        return
    bar = st.progress(0.0, text="Starting…")

    def show(remote, done, total):
        bar.progress(min(done / total, 1.0) if total else 0.0,
                     text=f"{remote.url.rsplit('/', 1)[-1]}: {megabytes(done)} of {megabytes(total)}")
    try:
        with LOCK:
            for part in parts:
                ds.install(part, base_url=os.environ.get(MIRROR) or None, progress=show)
    except (DownloadError, OSError) as e:
        bar.empty()
        st.error(f"The download failed: {e}")
        return
    bar.empty()
    st.cache_data.clear()                # the pages' cached "not there" answers
    for done in clear:
        done()
    st.rerun()
