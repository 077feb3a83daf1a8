"""ALTI-Logit (core.studies.alti_logit): the way back through a normalisation is its linear map's transpose, and
where nothing but attention writes into the stream, the tokens' shares add up to the logit difference exactly."""
import numpy as np
import pytest
import torch

import core
from core.studies import alti_logit as AL
from tests.helpers import tiny_model

SRC = "a man in a blue shirt is standing on a ladder"
PREFIX = "ein Mann in"


@pytest.mark.parametrize("norm", [torch.nn.LayerNorm(8), torch.nn.RMSNorm(8, eps=1e-6)])
def test_pull_back_is_the_transpose_of_the_normalisation_with_its_scale_fixed(norm):
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(8, generator=g))
    z, u, v = (torch.randn(8, generator=g) for _ in range(3))
    if isinstance(norm, torch.nn.LayerNorm):
        scale = (z.var(unbiased=False) + norm.eps).sqrt()
        linear = norm.weight * (v - v.mean()) / scale                   # LN's linear part at z's scale
    else:
        linear = norm.weight * v / ((z * z).mean() + norm.eps).sqrt()
    with torch.no_grad():
        assert float(AL.pull_back(norm, z, u) @ v) == pytest.approx(float(u @ linear), rel=1e-5)


def test_other_normalisations_are_refused_in_words():
    with pytest.raises(ValueError, match="BatchNorm1d"):
        AL.pull_back(torch.nn.BatchNorm1d(8), torch.zeros(8), torch.zeros(8))


def attention_only(model):
    """The decoder's feed-forward outputs, attention output biases and LayerNorm biases set to 0 (the encoder's
    stay): then the step's final state is the start embedding plus the attention blocks' parts, nothing else."""
    with torch.no_grad():
        for layer in model.decoder:
            layer.ffn.w_2.weight.zero_()
            layer.ffn.w_2.bias.zero_()
            for mha in (layer.self_attn, layer.cross_attn):
                mha.w_o.bias.zero_()
            for res in (layer.res_self, layer.res_cross, layer.res_ffn):
                res.norm.bias.zero_()
        if isinstance(model.dec_norm, torch.nn.LayerNorm):
            model.dec_norm.bias.zero_()
    return model


def one_piece_words(tm) -> list[str]:
    """Words of one piece (the tiny tokenizer has few: 'the', 'a'), so that the log-odds is one logit difference."""
    return [w for w in ("ein", "der", "the", "a") if len(tm.tokenizer.encode(w, "tgt")) == 1]


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_shares_add_up_to_the_log_odds_where_only_attention_writes(tokenizer, norm):
    tm = core.TranslationModel(attention_only(tiny_model(len(tokenizer), seed=4, norm=norm)), tokenizer)
    chosen, other = one_piece_words(tm)[:2]
    c = tm.contrast(SRC, PREFIX, chosen, other, method="alti_logit")
    total = c.src_scores.sum() + c.tgt_scores.sum() + c.unassigned
    assert abs(c.log_odds) > 0.05
    assert total == pytest.approx(c.log_odds, rel=1e-3, abs=1e-4)


def test_with_feed_forward_outputs_they_do_not(tokenizer):
    """The same model with its feed-forward networks: the shares now miss what those wrote (the check can fail)."""
    tm = core.TranslationModel(tiny_model(len(tokenizer), seed=4, norm="pre"), tokenizer)
    chosen, other = one_piece_words(tm)[:2]
    c = tm.contrast(SRC, PREFIX, chosen, other, method="alti_logit")
    assert abs(c.src_scores.sum() + c.tgt_scores.sum() + c.unassigned - c.log_odds) > 1e-3


def test_the_rollout_hands_each_part_to_the_tokens_it_came_from(tokenizer):
    """One decoder layer: the cross block's parts go to source tokens through the encoder rollout, so the source's
    total is the cross parts' logits summed, whatever the encoder mixed."""
    model = attention_only(tiny_model(len(tokenizer), seed=6, norm="pre", N_dec=1))
    tm = core.TranslationModel(model, tokenizer)
    src = torch.tensor([tm.source_ids(SRC)])
    prefix = tm.target_ids(PREFIX)
    word = tm.tokenizer.encode(one_piece_words(tm)[0], "tgt")
    dec = torch.tensor([[tm.cfg.bos_id] + prefix])
    s, d = AL.logit_contributions(model, src, dec, word, len(prefix))
    with AL.Capture(model) as cap, AL.NormInputs({"final": model.dec_norm}) as norms:
        model(src, dec, need_weights=True)
    b = cap.seen[("cross", 0)]
    parts = AL.weighted_vectors(b["probs"][0], AL.value_vectors(model.decoder[0].cross_attn, b["value"][0]))
    u = AL.pull_back(model.dec_norm, norms.seen["final"][len(prefix)], model.generator.weight[word[0]])
    with torch.no_grad():
        assert s.sum() == pytest.approx(float(parts[len(prefix)].sum(0) @ u), rel=1e-4, abs=1e-5)
    assert np.isfinite(d).all()
