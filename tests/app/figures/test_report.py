"""app.figures.report: one sentence's every map in one HTML file that carries its own JavaScript (the browser test
tests/browser/test_share_browser.py opens one with the network blocked and switches a head)."""
import datetime
import json
import re

import numpy as np

from app.figures import report

SRC = "the quick brown fox jumps over the lazy dog"


def data_of(page: str) -> dict:
    """The maps the file carries (its JSON block)."""
    block = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    return json.loads(block.replace("<\\/", "</"))


def test_the_file_holds_every_kind_layer_and_head_its_texts_and_its_size(translation_model):
    res = translation_model.attend(SRC, tgt="der schnelle braune Fuchs </s> springt")
    page = report.sentence_report(res, "tiny-model", "A tiny model (2 layers).", words=False,
                                  date=datetime.date(2026, 12, 5))
    data = data_of(page)
    assert set(data["kinds"]) == {"enc_self", "dec_self", "cross"} and data["heads"] == res.enc_self.shape[1]
    for kind, stored in data["kinds"].items():
        maps = np.asarray(stored["maps"]) / data["scale"]                            # (L, h, R, C) in thousandths
        np.testing.assert_allclose(maps, res.view(kind).maps, atol=0.5 / data["scale"])
        assert stored["frame"]["layout"]["xaxis"]["side"] == "top"                  # the explorer's figure
    assert "the quick brown fox" in page and "tiny-model" in page and "A tiny model (2 layers)." in page
    assert "2026-12-05" in page and "your translation" in page
    assert "&lt;/s&gt;" in page and "</s> springt" not in page.split("<script")[0]     # escaped in the text
    size = re.search(r"This file: ([\d.]+) MB", page).group(1)
    assert abs(float(size) - len(page.encode("utf-8")) / 1e6) < 0.06
    assert "<script src=" not in page and "Plotly.react" in page and len(page) > 4_000_000   # plotly.js inside


def test_a_long_sentence_title_is_cut_at_a_word():
    assert report.short("word " * 30).endswith("word…") and len(report.short("word " * 30)) <= 61
    assert report.short("Short one.") == "Short one."
