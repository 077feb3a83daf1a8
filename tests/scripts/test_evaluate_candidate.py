"""scripts/evaluate_candidate.py: one call scores a candidate against the shipped checkpoint: swap or not."""
import json

import pytest

import core
from core.checkpoint import read_card
from scripts import evaluate, evaluate_candidate as ec
from tests.helpers import stopping_model


@pytest.fixture(scope="module")
def two_checkpoints(corpus, tokenizer, tmp_path_factory):
    """(shipped, candidate): tiny random models scored on the number corpus, with a tokenizer that has the letters
    of the paper's sentences (byte fallback); the shipped one already evaluated."""
    _, data = corpus
    root = tmp_path_factory.mktemp("review")
    folders = []
    for name, seed in (("shipped", 0), ("candidate", 1)):
        model = stopping_model(len(tokenizer), eos_bias=3.0, seed=seed)
        core.save_checkpoint(root / name, model, tokenizer, {"name": name, "data": {"folder": str(data)}})
        folders.append(root / name)
    assert evaluate.main([str(folders[0]), "--no-progress", "--threads", "1"]) == 0
    return tuple(folders)


@pytest.mark.slow
def test_review_scores_the_candidate_and_compares(two_checkpoints, tmp_path, capsys):
    shipped, candidate = two_checkpoints
    out = tmp_path / "review.json"
    assert ec.main([str(candidate), "--shipped", str(shipped), "--no-progress", "--threads", "1",
                    "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    card = read_card(candidate)
    assert card.test["sentences"] == read_card(shipped).test["sentences"] == 30      # evaluated like the shipped
    assert card.test["beam"] == 4 and card.pronouns["items"] > 0                     # and its pronouns written
    review = json.loads(out.read_text())
    assert review["candidate"]["test"]["bleu"] == card.test["bleu"]
    assert review["candidate"]["feminine"] == card.pronouns["feminine"]
    assert set(review["shipped"]["figures"]) == {"3", "4"}
    for f in [*review["candidate"]["figures"].values(), *review["shipped"]["figures"].values()]:
        assert 1 <= f["layer"] <= 2 and 1 <= f["head"] <= 4 and isinstance(f["linked"], bool)
    gain = card.test["bleu"] - read_card(shipped).test["bleu"]
    assert review["replace"] == ec.verdict(review["shipped"], review["candidate"])[0]
    assert review["verdict"] in printed and "newstest2014 BLEU" in printed and "pronouns feminine" in printed
    halvings = review["candidate"]["anaphora_halvings"]          # the held-out head over random halvings too
    assert halvings == card.pronouns["anaphora_head"]["random_halvings"]
    # the shipped card lacked them (written before they existed): the review ran its pronoun test once
    assert review["shipped"]["anaphora_halvings"] == read_card(shipped).pronouns["anaphora_head"]["random_halvings"]
    assert f"{100 * halvings['mean']:.1f}% (5-95%" in printed
    if gain < ec.SHIP_RULE["bleu_gain"]:         # two random models: the figure links decide nothing here
        assert not review["replace"]


@pytest.mark.slow
def test_a_quick_look_gives_no_verdict(two_checkpoints, capsys):
    shipped, candidate = two_checkpoints
    assert ec.main([str(candidate), "--shipped", str(shipped), "--limit", "5", "--no-progress"]) == 0
    assert "not comparable: the two newstest scores differ in sentences (30 against 5)" in capsys.readouterr().out


def scored(bleu, linked=(True, True), beam=4, accuracy=0.7, feminine=0.5, anaphora_mean=0.2):
    return {"test": {"bleu": bleu, "chrf": 40.0, "sentences": 2737, "beam": beam, "alpha": 0.6, "references": "r"},
            "accuracy": accuracy, "feminine": feminine, "anaphora_mean": anaphora_mean,
            "figures": {n: {"linked": lk} for n, lk in zip(ec.LINKED_FIGURES, linked)}}


def test_verdict_needs_a_bleu_point_both_links_and_no_worse_pronouns():
    assert ec.verdict(scored(14.72), scored(15.72)) == (True, "replace: +1.00 BLEU (at least +1.0), the figure "
                                                              "links kept, no worse on the pronoun test and the "
                                                              "anaphora head.")
    assert ec.verdict(scored(14.72), scored(15.71))[1].startswith("keep the shipped one: +0.99 BLEU")
    assert ec.verdict(scored(14.72), scored(16.0, linked=(True, False)))[1] == (
        "keep the shipped one: the candidate loses the Figure 4 link.")
    assert ec.verdict(scored(14.72, linked=(False, True)), scored(16.0, linked=(False, True)))[0]
    assert "differ in beam (4 against 1)" in ec.verdict(scored(14.72), scored(16.0, beam=1))[1]
    assert "has no newstest score" in ec.verdict(scored(None), scored(16.0))[1]
    assert ec.verdict(scored(14.72), scored(16.0, feminine=0.40))[1] == (
        "keep the shipped one: +1.28 BLEU, but worse on pronouns feminine (40.0% against 50.0%).")
    assert "the anaphora head over random halvings" in ec.verdict(scored(14.72), scored(16.0, anaphora_mean=0.1))[1]
    assert ec.verdict(scored(14.72), scored(16.0, accuracy=None))[1].startswith("cannot tell: no score for "
                                                                             "pronouns overall")


@pytest.mark.slow
def test_a_missing_checkpoint_is_a_readable_error(two_checkpoints, tmp_path, monkeypatch, capsys):
    assert ec.main([str(tmp_path / "nothing"), "--shipped", str(two_checkpoints[0])]) == 1
    assert "error:" in capsys.readouterr().err
    def translate(_):
        raise AssertionError("a wrong --shipped should stop the review before it translates")
    monkeypatch.setattr(ec.evaluate, "evaluate", translate)
    assert ec.main([str(two_checkpoints[1]), "--shipped", str(tmp_path / "nothing")]) == 1
    assert "error:" in capsys.readouterr().err


def test_figures_a_tokenizer_cannot_spell_are_not_a_crash(corpus):
    tokenizer = core.Tokenizer.from_folder(corpus[1])              # number words only: no 'making', no 'Law'
    tm = core.TranslationModel(stopping_model(len(tokenizer)), tokenizer)
    links = ec.figure_links(tm)
    assert all(f["linked"] is None and "does not contain" in f["problem"] for f in links.values())
    shipped = scored(14.72)
    candidate = {**scored(16.0), "figures": links}
    assert ec.verdict(shipped, candidate)[1] == "keep the shipped one: the candidate loses the Figure 3 and 4 links."


@pytest.mark.slow
def test_reuse_test_skips_translating_only_when_measured_alike(two_checkpoints, monkeypatch, capsys):
    shipped, candidate = two_checkpoints
    args = [str(candidate), "--shipped", str(shipped), "--no-progress", "--reuse-test"]
    assert ec.main(args) == 0                            # measured like the shipped (all 30 sentences) by now
    def translate(_):
        raise ValueError("translated again")
    monkeypatch.setattr(ec.evaluate, "evaluate", translate)
    assert ec.main(args) == 0
    assert ec.main([*args, "--limit", "5"]) == 1         # a quick look always translates
    assert "translated again" in capsys.readouterr().err


def test_figure_links_reports_the_head_that_links_not_a_louder_unselective_one(monkeypatch):
    """A head every word looks through can outscore the one that follows the dependency: the review names the
    linking head (as the verdict counts it), and the best-scoring head only when none links."""
    import pandas as pd
    from core.studies import paper_figures as pf
    table = pd.DataFrame({"layer": [4, 4, 5], "head": [6, 3, 2], "score": [0.44, 0.41, 0.30],
                          "others": [0.31, 0.13, 0.05]})               # 1.4x (not selective), 3.2x, below the bar
    def heads(number, attn, sentence, scores=table):
        return pf.FigureHeads(number, "t", sentence, 4, [6, 3], "making", scores, 0.02, 0.40), None
    monkeypatch.setattr(ec, "find_heads", heads)
    class Model:
        def attend(self, sentence):
            return None
    links = ec.figure_links(Model())
    assert links[3] == {"linked": True, "layer": 5, "head": 4, "score": 0.41, "others": 0.13, "threshold": 0.40}
    monkeypatch.setattr(ec, "find_heads", lambda n, a, s: heads(n, a, s, table.iloc[[0, 2]]))
    assert ec.figure_links(Model())[3] == {"linked": False, "layer": 5, "head": 7, "score": 0.44, "others": 0.31,
                                           "threshold": 0.40}
