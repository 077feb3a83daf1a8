"""app.heads_tabs.scores: every score core.studies.analysis computes has a column title and a plain explanation (the
head finder's select box, table and "What the columns mean" read them); the tabs themselves run in
tests/app/screens/test_heads.py."""
from app.heads_tabs.scores import COLUMNS, PLAIN
from core.studies import analysis


def test_every_score_has_a_title_and_a_plain_explanation():
    assert set(analysis.SCORES) <= set(COLUMNS) and set(analysis.SCORES) <= set(PLAIN)
    assert all(PLAIN[s].endswith(".") and len(PLAIN[s]) > len(COLUMNS[s]) for s in analysis.SCORES)

