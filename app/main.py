"""Attention Explorer: `streamlit run app/main.py`. The entry point only builds the navigation."""
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:          # so that `core` and `app` import when run by streamlit
    sys.path.insert(0, str(ROOT))

from app.common import sidebar  # noqa: E402

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

# not "pages/": Streamlit would also serve that folder as old-style pages that bypass this file
PAGES = Path(__file__).parent / "views"
PAGE_LIST = [  # file, title, icon; the first is the default page
    ("explorer.py", "Attention explorer", "🔍"),
    ("paper_figures.py", "The paper's figures", "📄"),
    ("heads.py", "What heads do", "🧠"),
    ("positional_encoding.py", "Positional encoding", "〰️"),
    ("lr_schedule.py", "Learning-rate schedule", "📈"),
    ("scaled_attention.py", "Attention, step by step", "🧮"),
    ("checkpoint.py", "Checkpoint", "💾"),
]
# A page file not written yet is left out rather than breaking every other page.
nav = st.navigation([st.Page(PAGES / f, title=t, icon=i, default=n == 0)
                     for n, (f, t, i) in enumerate(PAGE_LIST) if (PAGES / f).exists()])
sidebar()
nav.run()
