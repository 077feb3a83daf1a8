"""What the app sets up before a page builds a figure: called by app/main.py at the top of every rerun (cheap, and
the same each time), and by whoever builds the app's figures outside it, such as scripts/bench/bench_app.py.
Importing a module of app/ sets nothing."""
import os

import torch

from app.figures.style import install


def set_up_process() -> None:
    """Readable text in every Plotly figure built from now on (after Streamlit set its own default template), and
    torch on one thread (env var ATTN_EXPLORER_THREADS): one sentence at a time means tiny matrix products, and on a
    busy machine several threads spin-wait for each other (measured: a cold translation took 31 s on 2 threads, 3.8 s
    on 1). Safe to call again."""
    install()
    torch.set_num_threads(int(os.environ.get("ATTN_EXPLORER_THREADS", "1")))
