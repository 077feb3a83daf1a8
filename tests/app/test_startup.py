"""Importing the app's modules sets nothing; app.startup.set_up_process sets Plotly's template and torch's threads."""
import pytest
import subprocess
import sys

from core.paths import REPO

CHECK = """
import plotly.io as pio, streamlit, torch
torch.set_num_threads(3)
before = pio.templates.default           # Streamlit's own, set when it is imported
import app.cache, app.checkpoints, app.display, app.run_log, app.sidebar, app.startup, app.text, app.demo
import app.figures.attention, app.figures.tokens, app.figures.style
assert pio.templates.default == before != "attention_explorer", pio.templates.default
assert torch.get_num_threads() == 3
app.startup.set_up_process()
assert pio.templates.default == "attention_explorer" and torch.get_num_threads() == 1
app.startup.set_up_process()                       # again: the same
assert pio.templates.default == "attention_explorer"
"""


@pytest.mark.slow
def test_importing_sets_nothing_and_the_set_up_does():
    env = {"PATH": "/usr/bin:/bin", "ATTN_EXPLORER_THREADS": "1", "HOME": "/tmp"}
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
