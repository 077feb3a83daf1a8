"""Alignment read from norm-based maps and ALTI+ (core/studies/alignment_weights.py), and evaluate_alignment.py
--weights on a tiny checkpoint: every candidate of each way scored, the best of each in the card."""
import json

import numpy as np
import pytest
import torch

import core
from core.studies import alignment as al
from core.studies import alignment_gold as ag
from core.studies import alignment_weights as aw
from scripts import evaluate_alignment as script
from tests.helpers import FIXTURES

GOLD = FIXTURES / "alignment_gold"


def test_attention_through_the_new_path_scores_as_before(translation_model):
    pairs = ag.read_gold(GOLD)
    old = al.report(al.evaluate(translation_model, pairs))
    new = {w: al.report(ev) for w, ev in aw.evaluate_weights(translation_model, pairs).items()}
    assert new["attention"]["heads"] == old["heads"] and new["attention"]["selected"] == old["selected"]
    L, h = translation_model.cfg.N_dec, translation_model.cfg.h
    assert len(new["norm"]["heads"]) == 2 * (L * h + L + 1)
    assert len(new["alti"]["heads"]) == 2 * (2 * L + 1)
    assert new["alti"]["selected"] is None and new["alti"]["best_layer"]["head"] in ("rolled", "block")
    assert new["norm"]["best_layer"]["head"] == "sum"
    json.loads(json.dumps(new, allow_nan=False))


def test_norm_candidates_are_attention_times_value_size(translation_model):
    """A norm-based head's word map is its attention weights times ||f(x_j)||, f recomputed here from the weights
    and the encoder's output, rows renormalised."""
    from core.studies.contributions import contributions, value_vectors
    tm, pair = translation_model, ag.read_gold(GOLD)[0]
    src, tgt = ag.model_text(pair)
    c = contributions(tm, src, tgt)
    slots = al.gold_slots(c.result, pair)
    labels, stack = aw.weight_candidates(c, "norm", "produced", slots)
    ids = tm.tokenizer.encode(src, "src") + [tm.cfg.eos_id]
    with torch.no_grad():
        memory, _, _ = tm.model.encode(torch.tensor([ids]))
        f = value_vectors(tm.model.decoder[0].cross_attn, memory[0]).norm(dim=-1).numpy()     # (h, S)
    expected = al.word_maps(c.result, "produced", *slots, maps=c.result.cross[0, 1] * f[1][None, :])
    np.testing.assert_allclose(stack[labels.index((1, 2))], expected, atol=1e-5)
    with pytest.raises(ValueError, match="choose one of"):
        aw.weight_candidates(c, "saliency", "read", slots)


@pytest.fixture
def tiny_checkpoint(tmp_path, tokenizer):
    torch.manual_seed(0)
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, core.Transformer(core.preset("tiny", vocab_size=len(tokenizer))).eval(), tokenizer,
                         {"name": "tiny"})
    return folder


def test_script_weights_go_into_the_card(tiny_checkpoint, tmp_path, capsys):
    args = [str(tiny_checkpoint), "--gold", str(GOLD), "--no-progress"]
    assert script.main(args) == 0
    attention_only = json.loads((tiny_checkpoint / "card.json").read_text())["alignment"]
    out = tmp_path / "all.json"
    assert script.main(args + ["--weights", "attention", "norm", "alti", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "== norm" in printed and "== alti" in printed and "held-out winner" in printed
    card = json.loads((tiny_checkpoint / "card.json").read_text())["alignment"]
    assert set(card["by_weights"]) == {"attention", "norm", "alti"}
    assert card["held_out_winner"]["winner"] in card["by_weights"]
    assert card["selected"] == attention_only["selected"]                     # the attention entry as before
    assert set(json.loads(out.read_text())["by_weights"]["norm"]) >= {"heads", "selected", "best_layer"}
    # a run of one other way keeps the attention entry and the other ways' summaries
    assert script.main(args + ["--weights", "alti"]) == 0
    again = json.loads((tiny_checkpoint / "card.json").read_text())["alignment"]
    assert again["selected"] == attention_only["selected"] and set(again["by_weights"]) == {"attention", "norm", "alti"}
