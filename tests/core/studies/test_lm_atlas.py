"""core.studies.lm_atlas: a language model's heads named by their strongest role. The planted induction model
(core.studies.planted_induction: layer 2, head 1 an induction head, layer 1, head 1 a previous-token head, by
construction) must be read so; hand-made maps check each role's hits and baselines."""
import json

import numpy as np
import pytest

from core import load_checkpoint
from core.studies import atlas, lm_atlas
from core.studies.atlas import Tally
from tests.app.lm_fixtures import planted_checkpoint

TEXTS = ["w1 w2 w3 w4 w5 w6", "w7 w8 w9 w1 w2", "the quick brown fox jumps"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return load_checkpoint(planted_checkpoint(tmp_path_factory.mktemp("planted") / "planted-induction"))


def entry(result, layer, head):
    return next(e for e in result["heads"][atlas.LM_KIND] if (e["layer"], e["head"]) == (layer, head))


def test_the_planted_heads_get_their_roles(planted, tmp_path):
    result = lm_atlas.compute_lm_atlas(planted, TEXTS, name="planted", sequences=8)
    assert set(result["heads"]) == {"self"} and len(result["heads"]["self"]) == 2 * 3
    assert result["names"] == {"self": "Masked self-attention"} and result["family"] == "decoder-only"
    assert result["corpus"]["self"] == "3 English probe sentences and 8 sequences of 8 random tokens repeated twice"
    ind, prev = entry(result, 2, 1), entry(result, 1, 1)
    assert ind["role"] == "induction" and ind["margin"] >= atlas.MARGIN and "examples" not in ind
    score, base = ind["scores"]["induction"]
    assert score > 50 and base == pytest.approx(100 * np.mean(1 / (np.arange(9, 17) + 1)), abs=0.1)
    assert prev["role"] == "previous" and prev["scores"]["previous"][0] == 100.0
    shown = {result["sentences"][i][0] for i in prev["examples"]}
    assert shown <= set(TEXTS) and all(s[1] is None for s in result["sentences"])
    atlas.write_atlas(tmp_path, result)
    assert atlas.read_atlas(tmp_path) == json.loads(json.dumps(result))


def test_a_decoder_row_on_the_first_token_is_a_sink_and_one_before_is_previous():
    T = 5
    maps = np.zeros((1, 2, T, T))
    maps[0, 0, :, 0] = 1.0                                  # head 1: everything on the first token
    maps[0, 1, 0, 0] = 1.0
    maps[0, 1, np.arange(1, T), np.arange(T - 1)] = 1.0     # head 2: the token before
    tallies = {"previous": Tally(), "sink": Tally()}
    lm_atlas.decoder_rows(maps, tallies, 0)
    prev, prev_base = tallies["previous"].score()
    sink, sink_base = tallies["sink"].score()
    assert prev[0].tolist() == [25.0, 100.0]                # head 1's row 1: its previous token is the first
    assert sink[0].tolist() == [100.0, 0.0]
    assert prev_base == pytest.approx(100 * np.mean(1 / np.arange(2, T + 1)))
    assert sink_base == pytest.approx(100 * np.mean(1 / np.arange(3, T + 1)))


def test_an_encoder_row_is_scored_on_other_tokens_and_the_specials():
    roles = ["cls", None, None, None, "sep"]
    T = len(roles)
    maps = np.full((1, 3, T, T), 0.01)
    maps[0, 0, np.arange(T), np.arange(T)] = 0.9            # head 1 keeps to itself, but before that: the next one
    maps[0, 0, np.arange(T - 1), np.arange(1, T)] = 0.5
    maps[0, 1, np.arange(1, T), np.arange(T - 1)] = 0.9     # head 2: the token before
    maps[0, 2, :, 4] = 0.9                                  # head 3: [SEP]
    tallies = {r: Tally() for r in ("previous", "next", "sink")}
    lm_atlas.encoder_rows(maps, roles, tallies, 0)
    assert tallies["next"].score()[0][0].tolist() == [100.0, 0.0, 0.0]      # text pieces 1, 2 -> 2, 3
    assert tallies["previous"].score()[0][0].tolist() == [0.0, 100.0, 0.0]
    sink, base = tallies["sink"].score()
    assert sink[0].tolist() == pytest.approx([0.0, 100 / 3, 100.0])       # head 2's first piece: before it, [CLS]
    assert base == pytest.approx(100 * 2 / T)


def test_a_translation_model_is_refused(translation_model):
    with pytest.raises(ValueError, match="decoder-only and encoder-only"):
        lm_atlas.compute_lm_atlas(translation_model, TEXTS)
