"""'Beyond this sentence' on The paper's figures, on the shipped checkpoints: the corpus line of each figure from
the card (or the command that measures it)."""
import pytest
from streamlit.testing.v1 import AppTest

from core.paths import REPO

PAGE = str(REPO / "app" / "screens" / "paper_figures.py")


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", ["news-small", "multi30k-small"])
def test_each_figure_says_what_its_head_does_beyond_the_sentence(checkpoint):
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["checkpoint"] = checkpoint
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.subheader].count("Beyond this sentence") == 3
    lines = [m.value for m in at.markdown if m.value.startswith("Over ")]
    needs = [i.value for i in at.info if "has not been measured over a corpus" in i.value]
    assert len(lines) + len(needs) == 3
    if checkpoint == "news-small":                             # its card has all three
        assert "follows dependencies 8+ words long" in lines[0] and "the one this sentence picks" in lines[0]
        assert "pf3_corpus" in [c.key for c in at.get("plotly_chart")]
