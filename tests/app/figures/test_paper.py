"""app.figures.paper beyond the figure's sentence: the corpus lines of Figures 3, 4 and 5 from a card, the head the
sentence picks, and the table of dependencies by layer and length."""
import numpy as np
import pandas as pd
from types import SimpleNamespace

from app.figures import paper as figs

CORPUS = {"length": "8+", "layer": 2, "head": 1, "halves": {"first": 10, "second": 10},
          "buckets": [{"length": "1-2", "n": 50, "layer": 1, "head": 2, "follows": 40.0, "baseline": 30.0,
                       "offset": 1, "ratio": 1.33},
                      {"length": "8+", "n": 30, "layer": 2, "head": 1, "follows": 20.0, "baseline": 10.0,
                       "offset": -8, "ratio": 2.0}],
          "by_layer": {"1-2": [40.0, 20.0], "8+": [5.0, 20.0]}, "grid": [[5.0, 1.0], [20.0, 3.0]]}


def found(layer, head, linked=True):
    scores = pd.DataFrame({"layer": [layer], "head": [head], "score": [0.5], "others": [0.1]})
    return SimpleNamespace(linked=linked, linking=scores, best=scores.iloc[0])


def test_figure3_line_places_the_sentences_head():
    assert figs.picked_head(found(1, 1)) == (1, 1)
    line = figs.beyond_figure3(CORPUS, found(0, 0))
    assert line.startswith("Over 10 held-out sentences, layer 2 head 1 follows dependencies 8+ words long 2.0 times")
    assert line.endswith("layer 1 head 1, the one this sentence picks, does so in 5.0% of them (rank 2 of 4).")
    assert figs.beyond_figure3(CORPUS, found(1, 0)).endswith("is that head.")
    assert figs.beyond_figure3(None, found(0, 0)) is None


def test_figure4_line_from_random_halvings_and_the_atlas():
    pronouns = {"anaphora_head": {"layer": 6, "head": 5, "chance": 0.1,
                                  "random_halvings": {"mean": 0.56, "p05": 0.43, "p95": 0.7, "splits": 1000,
                                                      "sentences_second_half": 23}}}
    atlas = {"heads": {"enc_self": [{"layer": 1, "head": 1, "scores": {"anaphora": [15.2, 10.0]}}]}}
    line = figs.beyond_figure4(pronouns, found(0, 0), atlas)
    assert "Over 1,000 random halvings" in line and "in 56% of the other half on average (5-95%: 43%-70%" in line
    assert line.endswith("layer 1 head 1, the one this sentence picks, is another head: it does so in 15% of the "
                         "whole set.")
    assert figs.beyond_figure4(pronouns, found(5, 4)).endswith("is that head.")
    assert figs.beyond_figure4({}, found(0, 0)) is None


def test_figure5_line_names_the_relations_of_the_sentences_head():
    syntax = {"halves": {"second": 1001}, "relations_scored": 56, "layers": {"2": ["det dep->head"]},
              "syntactic": [{"relation": "det", "direction": "dep->head", "layer": 2, "head": 4, "accuracy": 85.7,
                             "baseline": 60.3}]}
    assert figs.beyond_figure5(syntax, found(1, 3)).endswith("is that head for det dep->head (86% vs 60%).")
    assert "1 of 56 relations" in figs.beyond_figure5(syntax, found(0, 0))
    assert figs.beyond_figure5(syntax, found(0, 0)).endswith("is the chosen head for none of them.")


def test_long_arcs_figure_layers_then_the_offset_baseline():
    fig = figs.long_arcs_figure(CORPUS, (0, 0))
    z = np.asarray(fig.data[0].z)
    assert z.tolist() == [[40.0, 5.0], [20.0, 20.0], [30.0, 10.0]] and fig.data[0].y[-1] == "best offset"
    assert "layer 1 head 1: 5.0% at 8+" in fig.layout.title.text
