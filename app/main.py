"""Attention Explorer: `streamlit run app/main.py`. The entry point only builds the navigation."""
import time
from pathlib import Path

started = time.perf_counter()          # this run's start, for log_run

import streamlit as st  # noqa: E402  (after the clock starts: a run's time includes its imports)

from app.cache import unpin_checkpoint  # noqa: E402
from app.lesson import class_panel  # noqa: E402
from app.run_log import log_run  # noqa: E402
from app.sidebar import sidebar  # noqa: E402
from app.startup import set_up_process  # noqa: E402
from app.url_state import link_place  # noqa: E402

set_up_process()                       # Plotly's template and torch's threads, before any figure is built

st.set_page_config(page_title="Attention Explorer", page_icon=":material/search:", layout="wide")

# not "pages/": Streamlit would also serve that folder as old-style pages that bypass this file (until a
# session has called st.navigation); not "views/": that is core's attention view
PAGES = Path(__file__).parent / "screens"
# Material icons are drawn from Streamlit's own icon font: emoji need a font that a server or a school
# computer may lack (they then show as empty boxes).
SECTIONS = {  # the sidebar's sections: (file, title, icon) of their pages; the first page is the default
    "Explore a model": [
        ("explorer.py", "Attention explorer", ":material/search:"),
        ("heads.py", "What heads do", ":material/psychology:"),
        ("qk.py", "Queries and keys", ":material/scatter_plot:"),
        ("alignment.py", "Alignment", ":material/compare_arrows:"),
        ("pronouns.py", "Which pronoun?", ":material/quiz:"),
        ("how_it_writes.py", "How it writes", ":material/edit_note:"),
        ("checkpoint.py", "Checkpoint", ":material/inventory_2:"),
    ],
    "The paper": [
        ("lesson.py", "Lesson", ":material/school:"),          # a guided path for a class (app/lesson/lesson.toml)
        ("paper_figures.py", "The paper's figures", ":material/article:"),
        ("scaled_attention.py", "Attention, step by step", ":material/calculate:"),
        ("watch_it_learn.py", "Watch it learn", ":material/model_training:"),
        ("positional_encoding.py", "Positional encoding", ":material/waves:"),
        ("lr_schedule.py", "Learning-rate schedule", ":material/trending_down:"),
    ],
}
# Pages whose sentences come from one domain start on a checkpoint trained on it (until one is picked):
# the paper's figures use news sentences, which a caption model translates badly.
PAGE_DOMAIN = {"paper_figures.py": "news", "pronouns.py": "news", "lesson.py": "news"}
# A page file not written yet is left out rather than breaking every other page (and so is a section left
# empty). With no page marked default, st.navigation makes the first one the default.
written = {section: [st.Page(PAGES / f, title=t, icon=i) for f, t, i in pages if (PAGES / f).exists()]
           for section, pages in SECTIONS.items()}
nav = st.navigation({section: pages for section, pages in written.items() if pages})
link_place(st.sidebar.empty())         # "Copy link", under the pages: filled as the pages write their URL
try:
    class_panel.from_link()            # ?class=CODE on any page; a teacher link leaves the address before it is shown
    sidebar(prefer_domain=next((d for f, d in PAGE_DOMAIN.items() if nav.url_path == Path(f).stem), None))
    class_panel.sidebar_panel(nav.url_path or Path(SECTIONS["Explore a model"][0][0]).stem)   # "": the first page
    nav.run()
finally:                                # also when a page stops early (st.stop)
    unpin_checkpoint()                  # the next rerun looks at the checkpoint's files again
    log_run(started, nav.url_path)
