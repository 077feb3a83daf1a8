"""app.figures.atlas: the atlas figure (one heatmap a kind, a colour a role, clickable customdata), a head's table,
the explorer links and the roles by layer, on a hand-made atlas."""
from urllib.parse import parse_qs, urlparse

import numpy as np

from app.figures import atlas as figs
from app.figures.tokens import safe


def entry(layer, head, role, scores, **extra):
    return {"layer": layer, "head": head, "role": role, "margin": 12.0, "scores": scores, **extra}


ATLAS = {"margin": 10.0, "heads": {
    "enc_self": [entry(1, 1, "previous", {"previous": [60.0, 10.0], "syntax": [30.0, 25.0]}),
                 entry(1, 2, None, {"previous": [12.0, 10.0], "syntax": [26.0, 25.0]}),
                 entry(2, 1, "syntax", {"previous": [5.0, 10.0], "syntax": [45.0, 25.0]}, detail="det dep->head"),
                 entry(2, 2, "resting", {"previous": [1.0, 10.0], "resting": [90.0, 5.0]})],
    "cross": [entry(1, 1, "alignment", {"alignment": [60.0, 25.0]}), entry(1, 2, None, {"alignment": [9.0, 25.0]})]}}


def test_one_heatmap_a_kind_coloured_by_role_with_clickable_heads():
    fig = figs.atlas_figure(ATLAS)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 2                                               # no decoder self-attention here
    enc = heatmaps[0]
    assert np.asarray(enc.text).tolist() == [["prev", "–"], ["syn", "rest"]]
    z = np.asarray(enc.z)
    assert figs.ORDER[int(z[0, 0])] == "previous" and figs.ORDER[int(z[0, 1])] is None
    clicks = [t for t in fig.data if t.type == "scatter" and t.customdata is not None]    # a marker a cell
    assert np.asarray(clicks[0].customdata)[2].tolist() == [0, 2, 1]        # kind index, layer, head from 1
    assert np.asarray(clicks[1].customdata)[1].tolist() == [2, 1, 2]        # cross is the third kind
    assert "det dep-&gt;head" in clicks[0].hovertext[2] and "best margin" in clicks[0].hovertext[1]
    legend = {t.name for t in fig.data if t.type == "scatter" and t.customdata is None}
    assert legend == {safe(figs.role_name(r)) for r in ("previous", "syntax", "resting", "alignment", None)}
    assert "rests on &lt;/s&gt; or &lt;s&gt; (does nothing)" in legend      # Plotly reads <s> as strike-through


def test_head_table_strongest_first():
    table = figs.head_table(ATLAS["heads"]["enc_self"][2])
    assert table["margin (points)"].tolist() == [20.0, -5.0] and table["role"][0] == figs.role_name("syntax")


def test_explorer_link_names_the_head_and_keeps_the_sentence_whole():
    link = figs.explorer_link("news-small", "cross", 2, 3, "Is it 5 & 6? Yes.", "Ist es 5 & 6?")
    url = urlparse(link)
    assert url.path == "./"                                     # the explorer is the app's first page
    assert parse_qs(url.query) == {"checkpoint": ["news-small"], "text": ["Is it 5 & 6? Yes."],
                                   "tgt": ["Ist es 5 & 6?"], "kind": ["cross"], "layer": ["2"], "head": ["3"]}
    assert "tgt" not in figs.explorer_link("x", "enc_self", 1, 1, "a b")


def test_roles_by_layer():
    table = figs.roles_by_layer_table(ATLAS, "enc_self")
    assert table.set_index("layer").loc[2, "syn"] == 1 and table.set_index("layer").loc[1, "–"] == 1
