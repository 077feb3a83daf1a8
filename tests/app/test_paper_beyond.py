"""'Beyond this sentence' on The paper's figures, on the shipped checkpoints: the corpus line of each figure from
the card (or the command that measures it)."""
import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO

PAGE = str(REPO / "app" / "screens" / "paper_figures.py")
TABS = ["Figure 3: long distance", "Figure 4: anaphora", "Figure 5: structure"]      # its st.tabs


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", ["news-small", "multi30k-small"])
def test_each_figure_says_what_its_head_does_beyond_the_sentence(checkpoint):
    subheaders, lines, needs, charts = [], [], [], []
    for n, tab in enumerate(TABS, 3):                          # the page draws its open tab alone
        at = AppTest.from_file(PAGE, default_timeout=300)
        at.session_state["checkpoint"] = checkpoint
        at.session_state["pf_tab"] = tab
        at.run()
        assert [t.label for t in at.tabs] == TABS
        grids = [k for k in (c.key for c in at.get("plotly_chart")) if k.endswith("_grid") and "gold" not in k]
        assert grids == [f"pf{n}_grid"]                       # this tab's figure, no other
        assert not at.exception, [e.value for e in at.exception]
        subheaders += [s.value for s in at.subheader]
        lines += [m.value for m in at.markdown if m.value.startswith("Over ")]
        needs += [i.value for i in at.info if "has not been measured over a corpus" in i.value]
        charts += [c.key for c in at.get("plotly_chart")]
    assert subheaders.count("Beyond this sentence") == 3
    assert len(lines) + len(needs) == 3
    if checkpoint == "news-small":                             # its card has all three
        assert "follows dependencies 8+ words long" in lines[0] and "the one this sentence picks" in lines[0]
        assert "pf3_corpus" in charts
