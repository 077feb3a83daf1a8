"""Attention Explorer: `streamlit run app/main.py`. The entry point only builds the navigation."""
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # so that `core` and `app` import when run by streamlit
    sys.path.insert(0, str(ROOT))

from app.common import sidebar  # noqa: E402

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

PAGES = Path(__file__).parent / "pages"
nav = st.navigation([
    st.Page(PAGES / "explorer.py", title="Attention explorer", icon="🔍", default=True),
    st.Page(PAGES / "paper_figures.py", title="The paper's figures", icon="📄"),
    st.Page(PAGES / "heads.py", title="What heads do", icon="🧠"),
    st.Page(PAGES / "positional_encoding.py", title="Positional encoding", icon="〰️"),
    st.Page(PAGES / "lr_schedule.py", title="Learning-rate schedule", icon="📈"),
    st.Page(PAGES / "scaled_attention.py", title="Attention, step by step", icon="🧮"),
    st.Page(PAGES / "checkpoint.py", title="Checkpoint", icon="💾"),
])
sidebar()
nav.run()
