"""core.studies.emergence and its curves: pronoun hits, per-snapshot Figure 3/4 scores, on maps with known answers."""

import numpy as np
import pandas as pd
import pytest

import core
from app.figures.training import emergence_charts, emergence_summary
from core.studies import emergence as em
from core.studies import paper_figures as pf
from tests.helpers import tiny_model

# "The Law will never be perfect, but its application" in pieces, as tests/core/studies/test_paper_figures.py has it
FIG4 = ["▁The", "▁La", "w", "▁will", "▁never", "▁be", "▁perfect", ",", "▁but", "▁it", "s", "▁applic", "ation", "</s>"]
ITS, LAW = [9, 10], [1, 2]
# "The minister said that he would resign." : words The0 minister1 said2 that3 he4 would5 resign.6 </s>7
PRON = ["▁The", "▁minis", "ter", "▁said", "▁that", "▁h", "e", "▁would", "▁resign", ".", "</s>"]
HE, MINISTER, SAID, SELF, EOS = [5, 6], [1, 2], 3, 5, 10


def pronoun_rows():
    """(1, 4, 2, S) rows of the two pieces of 'he', each summing to 1; the antecedent is 'minister'.

    head 0: 'minister' 0.6 (two pieces of 0.3) against 'said' 0.4: a hit.
    head 1: itself 0.5, </s> 0.3, 'minister' 0.2: a hit, as itself and </s> are set aside.
    head 2: 'said' 0.6, 'minister' 0.4: a miss.
    head 3: the pieces disagree (all on 'minister'; 0.9 'said' + 0.1 'would'): their mean decides, a hit.
    """
    rows = np.zeros((1, 4, 2, len(PRON)))
    rows[0, 0, :, MINISTER] = 0.3
    rows[0, 0, :, SAID] = 0.4
    rows[0, 1, :, SELF] = 0.5
    rows[0, 1, :, EOS] = 0.3
    rows[0, 1, :, MINISTER[0]] = 0.2
    rows[0, 2, :, SAID] = 0.6
    rows[0, 2, :, MINISTER[1]] = 0.4
    rows[0, 3, 0, MINISTER] = 0.5
    rows[0, 3, 1, SAID] = 0.9
    rows[0, 3, 1, 7] = 0.1
    return rows


def test_pronoun_hits_take_the_most_attended_other_word():
    hits = em.pronoun_hits(pronoun_rows(), PRON, pronoun_index=4, antecedent_index=1)
    assert hits.tolist() == [[True, True, False, True]]
    rates, chance = em.hit_rates([(PRON, pronoun_rows(), 4, 1)] * 2)
    np.testing.assert_allclose(rates, [[1, 1, 0, 1]])
    assert chance == pytest.approx(1 / 6)                  # 8 words less 'he' and </s>
    full = np.random.default_rng(0).dirichlet(np.ones(len(PRON)), size=(2, 3, len(PRON)))
    np.testing.assert_array_equal(em.pronoun_rows(full, PRON, 4), full[:, :, HE])


def fig4_maps(step_has_head: bool, N=2, h=3):
    """Uniform encoder maps of FIG4; with the head, layer 1 head 2 sends 0.9 of 'its' to 'Law'."""
    S = len(FIG4)
    attn = np.full((N, h, S, S), 1.0 / S)
    if step_has_head:
        for r in ITS:
            attn[1, 2, r] = 0.1 / (S - 2)
            attn[1, 2, r, LAW] = 0.45
    return attn.astype(np.float16)


def write_snapshots(folder):
    probes = {"sentences": [{"line": 1053, "src": "The Law will never be perfect, but its application",
                             "src_tokens": FIG4}],
              "pronouns": [{"text": "The minister said that he would resign.", "src_tokens": PRON,
                            "pronoun_index": 4, "antecedent_index": 1}]}
    misses = np.zeros((2, 3, 2, len(PRON)))
    misses[..., SAID] = 1.0                                # every head: 'he' -> 'said'
    hits = misses.copy()
    hits[1, 2] = pronoun_rows()[0, 0]                     # the Figure 4 head also hits 'minister'
    paths = []
    for step, head in ((100, False), (200, True)):
        paths.append((step, folder / f"step_{step:07d}.npz"))
        np.savez_compressed(paths[-1][1], **{"0_enc_self": fig4_maps(head),
                                             "pronoun_0": (hits if head else misses).astype(np.float16)})
    paths.append((300, folder / "step_0000300.npz"))
    paths[-1][1].write_bytes(paths[0][1].read_bytes()[:100])   # cut short while training wrote it
    return probes, paths


def test_snapshot_scores_find_when_the_head_appears(tmp_path):
    probes, paths = write_snapshots(tmp_path)
    calls = []
    table, unreadable = em.snapshot_scores(probes, paths, progress=lambda d, n: calls.append((d, n)))
    assert unreadable == [300] and calls[-1] == (3, 3) and table.step.tolist() == [100, 200]
    before, after = table.iloc[0], table.iloc[1]
    assert not before.fig4_linked and before.fig4_score == pytest.approx(2 / 14, abs=2e-3)
    assert (after.fig4_layer, after.fig4_head, after.fig4_linked) == (1, 2, True)
    assert after.fig4_score == pytest.approx(0.9, abs=2e-3)
    assert after.fig4_application == pytest.approx(0.2 / 12, abs=1e-3)
    assert after.fig4_threshold == pf.LINK_CAP == 0.40    # 10 x 2/14 is more than all: the cap
    assert after.hit_rate == 1.0 and before.hit_best == 0.0 and after.hit_chance == pytest.approx(1 / 6)
    assert "fig3_score" not in table                       # no probe sentence has 'making … more difficult'
    found = em.appearance(table, 4)
    assert found["appeared"] and found["first_step"] == 200 and found["linked"] == 1 and found["snapshots"] == 2
    expected = {"step": 200, "layer": 1, "head": 2, "score": pytest.approx(0.9, abs=2e-3)}
    assert found["first"] == found["last"] == expected
    assert em.appearance(table, 3) is None
    assert "appeared at step 200" in emergence_summary(found, 4)
    final = {"fig4_score": 0.2, "fig4_linked": False, "fig4_layer": 0, "fig4_head": 1}
    summary = emergence_summary(found, 4, final)
    assert summary.endswith("no head links them: the best puts 0.20 there (layer 1, head 2).")
    assert "do not hold the Figure 3 sentence" in emergence_summary(None, 3)
    assert "No anaphora head appeared" in emergence_summary(em.appearance(table.iloc[:1], 4), 4)


def test_emergence_charts_draw_snapshots_final_weights_and_the_log(tmp_path):
    table, _ = em.snapshot_scores(*write_snapshots(tmp_path))
    final = {**table.iloc[1].dropna().to_dict(), "step": 250, "source": "final weights"}
    valids = pd.DataFrame({"step": [100, 200, 300],
                           "pronouns": [{"accuracy": 0.5, "feminine": 0.25, "masc_neut": 0.75}, None,
                                        {"accuracy": 0.6, "separation": 0.7, "feminine_lean": -0.5}]})
    charts = emergence_charts(table, final, valids)
    assert set(charts) == {"heads", "pronouns"}
    def rows(c):
        return [r for ds in c.to_dict()["datasets"].values() for r in ds]
    heads = rows(charts["heads"])
    law = [r for r in heads if r["series"].startswith("Figure 4: 'its' → 'Law'")]
    assert [(r["step"], r["source"]) for r in law] == [(100, "snapshot"), (200, "snapshot"), (250, "final weights")]
    assert law[1]["head"] == "layer 2, head 3" and law[1]["value"] == pytest.approx(0.9, abs=2e-3)
    pron = rows(charts["pronouns"])
    assert {r["value"] for r in pron if r["series"].startswith("translation: pronoun accuracy")} == {0.5, 0.6}
    told_apart = [(r["step"], r["value"]) for r in pron if r["series"].startswith("translation: genders told apart")]
    assert told_apart == [(300, 0.7)]                       # only where the log has it; the lean (nats) is not drawn
    assert emergence_charts(pd.DataFrame(), None, None) == {}


@pytest.mark.slow
def test_record_pronouns_matches_the_models_attention(tokenizer):
    tm = core.TranslationModel(tiny_model(len(tokenizer), N=2, max_len=256), tokenizer)
    anaphora = core.studies.analysis.load_anaphora()[:6]
    arrays, meta = em.record_pronouns(tm, anaphora)
    assert len(arrays) == len(meta) and meta
    for j, m in enumerate(meta):
        r = tm.attend(m["text"])
        assert r.src_tokens == m["src_tokens"]
        ids = core.tokenizer.word_ids(r.src_tokens)
        rows = [i for i, w in enumerate(ids) if w == m["pronoun_index"]]
        assert arrays[f"pronoun_{j}"].dtype == np.float16
        np.testing.assert_allclose(arrays[f"pronoun_{j}"], r.enc_self[:, :, rows], atol=2e-3)
    row = em.model_scores(tm, 7, anaphora)
    assert row["step"] == 7 and row["source"] == "final weights" and row["pronoun_sentences"] == len(meta)
    assert 0 <= row["hit_best"] <= 1 and {"fig3_score", "fig4_score", "fig4_next_word"} <= set(row)


def test_paper_probes_only_adds_what_the_dev_lines_lack():
    assert em.paper_probes(["A short one.", pf.FIGURE3_SENTENCE + " "]) == [(None, pf.FIGURE45_SENTENCE, None)]
    assert len(em.paper_probes([])) == 2


def test_held_out_hits_choose_on_the_first_half_and_score_the_second():
    """A head that hits on the first half only is chosen there and scores 0 where it was not chosen."""
    def item(hit_head):                   # 2 layers x 2 heads; 'he' looks at 'said', one head at 'minister'
        rows = np.zeros((2, 2, 2, len(PRON)))
        rows[..., SAID] = 1.0
        rows[1, hit_head, :, SAID], rows[1, hit_head, :, MINISTER[0]] = 0.0, 1.0
        return (PRON, rows, 4, 1)
    got = em.held_out_hits([item(0)] * 3 + [item(1)] * 3)
    assert (got["hit_held_out_layer"], got["hit_held_out_head"]) == (1, 0)
    assert got["hit_held_out"] == 0.0 and got["hit_held_out_sentences"] == 3
    assert got["hit_held_out_chance"] == pytest.approx(1 / 6)
    assert em.held_out_hits([item(0)] * 6)["hit_held_out"] == 1.0
    assert em.held_out_hits([item(0)] * 3) == {}


def test_held_out_spread_over_random_halvings():
    """Over many halvings: a head that hits everywhere scores 1 every time; hits on half the sentences spread."""
    def item(hit):                        # 2 layers x 2 heads; only head (1, 0) may look at 'minister'
        rows = np.zeros((2, 2, 2, len(PRON)))
        rows[..., SAID] = 1.0
        if hit:
            rows[1, 0, :, SAID], rows[1, 0, :, MINISTER[0]] = 0.0, 1.0
        return (PRON, rows, 4, 1)
    always = em.held_out_spread([item(True)] * 8, splits=50)
    assert always == {"mean": 1.0, "p05": 1.0, "p95": 1.0, "splits": 50, "sentences_second_half": 4}
    mixed = em.held_out_spread([item(True), item(False)] * 10, splits=400)
    assert 0.3 < mixed["mean"] < 0.6 and mixed["p05"] < mixed["mean"] < mixed["p95"]
    assert mixed == em.held_out_spread([item(True), item(False)] * 10, splits=400)    # seeded: the same each time
    assert em.held_out_spread([item(True)] * 3) == {}
