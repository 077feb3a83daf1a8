"""scripts/figure_links.py: the Figure 3 and 4 verdicts of a checkpoint and of each save of its run, one line each."""
import pytest
from safetensors.torch import save_file

import core
from core.checkpoint import unique_state_dict
from scripts import figure_links as fl
from scripts.evaluate_candidate import figure_links
from tests.helpers import stopping_model


@pytest.fixture(scope="module")
def run(tokenizer, tmp_path_factory):
    """(checkpoint, saves folder): a tiny random model that can spell the paper's sentences, and two saves of other
    random weights of its shape."""
    root = tmp_path_factory.mktemp("figure-links")
    core.save_checkpoint(root / "out", stopping_model(len(tokenizer), seed=0), tokenizer, {"name": "out"})
    (root / "saves").mkdir()
    for step, seed in ((100, 1), (200, 2)):
        weights = {k: v.contiguous() for k, v in unique_state_dict(stopping_model(len(tokenizer), seed=seed)).items()}
        save_file(weights, str(root / "saves" / f"step_{step:07d}.safetensors"))
    return root / "out", root / "saves"


def test_each_save_is_scored_with_its_own_weights(run, capsys):
    checkpoint, saves = run
    rows = fl.main([str(checkpoint), "--saves", str(saves), "--no-progress"])
    assert [r["weights"] for r in rows] == ["out", "step_0000100.safetensors", "step_0000200.safetensors"]
    assert rows[0]["figures"] == figure_links(core.load_checkpoint(checkpoint))
    scores = [(r["figures"][3]["score"], r["figures"][4]["score"]) for r in rows]
    assert len(set(scores)) == 3                                     # three different sets of weights
    for r in rows:
        for f in r["figures"].values():
            assert f["linked"] in (True, False) and 0 <= f["others"] <= 1 and 0 <= f["score"] <= 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("out: Figure 3: layer ") and " / others " in printed[0]
    assert printed[-1].startswith("step_0000200.safetensors: ") and "| Figure 4: layer " in printed[-1]
    assert [r["weights"] for r in fl.main([str(checkpoint), "--saves", str(saves), "--last", "1",
                                           "--no-progress"])] == ["out", "step_0000200.safetensors"]


def test_a_save_of_another_model_or_no_saves_is_a_readable_error(run, tokenizer, tmp_path, capsys):
    checkpoint, _ = run
    other = {k: v.contiguous() for k, v in
             unique_state_dict(stopping_model(len(tokenizer), seed=3, d_ff=8)).items()}
    save_file(other, str(tmp_path / "step_0000300.safetensors"))
    with pytest.raises(SystemExit, match=r"step_0000300.safetensors does not match .*wrong shapes"):
        fl.main([str(checkpoint), "--saves", str(tmp_path), "--no-progress"])
    with pytest.raises(SystemExit, match="There are no weight saves"):
        fl.main([str(checkpoint), "--saves", str(tmp_path / "nowhere"), "--no-progress"])


def test_card_writes_the_checkpoints_own_links_into_card_json(run, tmp_path):
    import shutil

    from core.checkpoint import read_card
    checkpoint, saves = run
    copy = tmp_path / "out"
    shutil.copytree(checkpoint, copy)
    rows = fl.main([str(copy), "--saves", str(saves), "--card", "--no-progress"])
    figures = read_card(copy).figures
    assert figures == {str(n): f for n, f in rows[0]["figures"].items()} and set(figures) == {"3", "4"}
    assert read_card(checkpoint).figures is None                    # without --card nothing is written


def test_corpus_measures_figure3_beyond_its_sentence_into_the_card(run, tmp_path, capsys):
    import shutil

    from core.checkpoint import read_card
    from tests.helpers import FIXTURES
    checkpoint, _ = run
    copy = tmp_path / "out"
    shutil.copytree(checkpoint, copy)
    fl.main([str(copy), "--card", "--corpus", str(FIXTURES / "syntax" / "mini.conllu"), "--min-arcs", "1",
             "--no-progress"])
    corpus = read_card(copy).figures["3"]["corpus"]
    assert corpus["length"] == "8+" and corpus["layer"] is None        # four short sentences: no arc of 8+ words
    assert [r["length"] for r in corpus["buckets"]] == ["1-2", "3-4", "5-7"] and corpus["sentences"] == 4
    assert all(len(v) == 2 for v in corpus["by_layer"].values())     # tiny: two layers
    assert corpus["figure_head"]["layer"] == read_card(copy).figures["3"]["layer"]
    with pytest.raises(SystemExit, match="does not exist"):
        fl.main([str(copy), "--corpus", str(tmp_path / "none.conllu"), "--no-progress"])
