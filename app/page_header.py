"""The compact page header every page shares: a smaller title and less room above it, so that on a 1280x720
projector screen a page's controls and its first figure come early. Set once per rerun (app.sidebar.sidebar calls
it); a page only writes st.title as usual. Presenter mode does not change it: its bigger type is the figures'."""
import streamlit as st

# Streamlit's defaults: 6rem above the page (to clear its header bar), a 2.75rem title with 1.25rem above and 1rem
# below it, 2.25rem and 1.75rem section headings. The header bar is transparent and, with the minimal toolbar, holds
# only the status widget at its right end, so the title may sit beside it. Below 576 px the page's side padding
# shrinks to 1rem and the sidebar's open button would sit on the title: small screens keep the default room. On a
# phone a row of segmented buttons wraps rather than running off the screen.
COMPACT_HEADER_CSS = """
@media (min-width: 576px) {
  [data-testid="stMainBlockContainer"] { padding-top: 1.5rem; }
}
[data-testid="stMain"] h1 { font-size: 2rem; padding: 0 0 0.5rem 0; }
[data-testid="stMain"] h2 { font-size: 1.625rem; }
[data-testid="stMain"] h3 { font-size: 1.375rem; }
@media (max-width: 575px) {
  [data-testid="stMain"] [data-testid="stButtonGroup"] [role="radiogroup"] { flex-wrap: wrap; }
}
"""


def compact_header() -> None:
    """Send the compact header's style to the page; style-only HTML takes no room on it (Streamlit's event
    container), and sending it again on each rerun is harmless."""
    st.html(f"<style>{COMPACT_HEADER_CSS}</style>")
