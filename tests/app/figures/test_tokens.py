"""The one token heatmap (app/figures/tokens.py), and the figures of the explorer, heads, alignment and pronoun
pages that are built on it."""
import numpy as np
import pytest

from app.figures.alignment import alignment_figure
from app.figures.attention import heatmap_figure
from app.figures.heads import comparison_maps, maps_side_by_side
from app.figures.pronouns import attention_from_figure
from app.figures.tokens import label_font, token_heatmap, token_keys

ROWS = ["<s>", "▁Ein", "▁Mann", "<0x39>", "▁Mann"]
COLS = ["▁A", "▁man", "▁<b>", "</s>"]
ROW_KEYS = ["&lt;s&gt; (1)", "▁Ein (2)", "▁Mann (3)", "9 (4)", "▁Mann (5)"]
COL_KEYS = ["▁A (1)", "▁man (2)", "▁&lt;b&gt; (3)", "&lt;/s&gt; (4)"]


def maps(seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(len(COLS)), size=len(ROWS)).astype(np.float32)


def axes(fig, n=""):
    return fig.layout[f"xaxis{n}"], fig.layout[f"yaxis{n}"]


def assert_token_axes(fig, n=""):
    """A category per position, in order, labelled by its (escaped, byte-decoded) token; rows top to bottom."""
    x, y = axes(fig, n)
    assert x.type == y.type == "category"
    assert list(x.categoryarray) == list(x.tickvals) == COL_KEYS and list(y.categoryarray) == ROW_KEYS
    assert list(x.ticktext) == ["▁A", "▁man", "▁&lt;b&gt;", "&lt;/s&gt;"]
    assert list(y.ticktext) == ["&lt;s&gt;", "▁Ein", "▁Mann", "9", "▁Mann"]        # a repeated token, two rows
    assert y.autorange == "reversed" or list(y.range) == [len(ROWS) - 0.5, -0.5]


def test_the_trace_names_both_tokens_on_hover_one_way_or_the_other():
    attn = maps()
    hm = token_heatmap(attn, ROWS, COLS)
    assert list(hm.y) == ROW_KEYS == token_keys(["&lt;s&gt;", "▁Ein", "▁Mann", "9", "▁Mann"]) and list(hm.x) == COL_KEYS
    assert hm.hovertemplate.startswith("%{y} → %{x}") and hm.customdata is None       # no per-cell strings
    assert (hm.zmin, hm.zmax) == (0.0, pytest.approx(attn.max())) and hm.colorscale[0][1] == "rgb(247,251,255)"
    assert hm.colorbar.title.text == "weight"
    cells = token_heatmap(attn, ROWS, COLS, zmax=1.0, colorbar=None, hover="tokens")
    assert cells.customdata[3][2] == "9 → ▁&lt;b&gt;" and cells.hovertemplate.startswith("%{customdata}: ")
    assert cells.zmax == 1.0 and cells.colorbar.title.text is None


@pytest.mark.slow
def test_every_page_draws_its_maps_with_it():
    attn = maps()
    one = heatmap_figure(attn, ROWS, COLS, title="layer 1, head <2>")               # explorer, checkpoint, qk
    assert_token_axes(one)
    assert one.layout.title.text == "layer 1, head &lt;2&gt;" and one.layout.xaxis.title.text == "attended (key)"
    side = maps_side_by_side(attn, maps(1), ROWS, COLS, ("rollout", "raw"))        # heads: rollout
    assert_token_axes(side) or assert_token_axes(side, 2)
    assert side.layout.yaxis2.showticklabels is False and side.data[1].showscale is False
    cmp = comparison_maps(attn, maps(1), ROWS, COLS, ("A", "B"))                   # heads: two checkpoints
    for n in ("", 2, 3):
        assert_token_axes(cmp, n)
    diff = cmp.data[2]
    assert diff.colorscale[0][1] != cmp.data[0].colorscale[0][1] and diff.zmid == 0 and diff.zmin == -diff.zmax
    np.testing.assert_allclose(np.asarray(diff.z), maps(1) - attn, atol=1e-6)
    looked = attention_from_figure(attn, ROWS, COLS, {1: "antecedent"})            # pronouns
    assert_token_axes(looked)
    assert looked.layout.shapes[0].x0 == 0.5 and looked.layout.annotations[0].text == "antecedent"


def test_alignment_links_sit_on_the_cells_of_the_map():
    attn = maps()
    fig = alignment_figure(attn, ROWS, COLS, {"correct": {(0, 1)}, "wrong": {(4, 3)}},
                           {"sure": {(0, 1), (2, 2)}, "possible": {(3, 0)}}, "t")
    assert_token_axes(fig) or assert_token_axes(fig, 2)
    assert list(fig.layout.xaxis2.categoryarray) == COL_KEYS                   # the gold panel, with no map
    marks = {t.name: list(zip(t.x, t.y)) for t in fig.data[1:]}
    assert marks["correct: a sure gold link"] == [(COL_KEYS[1], ROW_KEYS[0])]
    assert marks["wrong: not in the gold"] == [(COL_KEYS[3], ROW_KEYS[4])]
    assert marks["gold: sure"] == [(COL_KEYS[1], ROW_KEYS[0]), (COL_KEYS[2], ROW_KEYS[2])]
    assert fig.data[0].hovertemplate.startswith("%{customdata}")


def test_side_by_side_maps_and_share_bars_keep_short_labels_level():
    from app.figures.contributions import source_share_figure
    short = ["▁a", "▁b", "▁c", "</s>"]
    many = [f"▁word{i}" for i in range(40)]
    assert maps_side_by_side(maps(), maps(1), ROWS, short, ("x", "y")).layout.xaxis.tickangle == 0
    wide = np.full((len(ROWS), len(many)), 1 / len(many), dtype=np.float32)
    crowded = comparison_maps(wide, wide, ROWS, many, ("A", "B"))         # three panels of 40 columns
    assert crowded.layout.xaxis.tickangle == crowded.layout.xaxis3.tickangle == -90
    assert source_share_figure(["Die", "Stadt"], np.array([0.6, 0.7])).layout.xaxis.tickangle == 0
    assert source_share_figure(many, np.full(40, 0.5), width=600).layout.xaxis.tickangle != 0
    # the bars' labels are set in the size their angle was worked out for: smaller for a longer sentence
    assert source_share_figure(many, np.full(40, 0.5)).layout.xaxis.tickfont.size == label_font(40) < label_font(2)


def test_a_prompts_labels_are_greyed_and_the_sentences_are_not():
    from app.figures.tokens import PROMPT_GREY
    from core.views import mark_prompt
    cols = mark_prompt(["▁translate", "▁to", ":", "▁a", "▁dog", "</s>"], 3)   # T5's prompt first (core.views)
    fig = heatmap_figure(np.full((1, 6), 1 / 6, dtype=np.float32), ["▁a"], cols)
    ticks = list(fig.layout.xaxis.ticktext)
    assert [PROMPT_GREY in t for t in ticks] == [True, True, True, False, False, False]
    assert "\u27e8translate\u27e9" in ticks[0] and ticks[5] == "&lt;/s&gt;"          # escaped as every label
    assert all(PROMPT_GREY not in k for k in fig.layout.xaxis.categoryarray)         # categories stay plain
