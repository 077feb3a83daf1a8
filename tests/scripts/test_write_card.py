"""scripts/write_card.py: CARD.md as a model card with headed sections, made from card.json."""
import json
import re

import pytest

from core.checkpoint import Card, read_card
from core.paths import CHECKPOINTS
from scripts import write_card
from scripts.write_card import card_markdown

SECTIONS = ["Model", "Training data", "Training procedure", "Evaluation", "Limitations", "How to reproduce"]


def headings(md: str) -> list[str]:
    return [line[3:] for line in md.splitlines() if line.startswith("## ")]


def section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_each_prose_field_opens_its_own_section():
    card = Card(name="c", notes="WHAT IT IS", data_notes="WHAT IT READ", training_notes="HOW IT LEARNED",
                evaluation_notes="HOW IT DID", limitations="WHAT IT CANNOT", recipe="scripts/recipes/c.sh",
                training={"preset": "tiny", "steps": 10, "epochs": 1.0}, parameters=1000,
                data={"folder": "data/x", "prep_report": {"corpus": "../shared/data/x", "spm_vocab_size": 300,
                                                          "settings": {"model_type": "bpe", "byte_fallback": True},
                                                          "splits": {"train": {"pairs_in": 12, "pairs_out": 10,
                                                                               "dropped": {"empty": 2, "ratio": 0}},
                                                                     "valid": {"pairs_out": 3}}}},
                test={"sentences": 3, "beam": 4, "alpha": 0.6, "bleu": 1.5, "chrf": 9.0})
    md = card_markdown(card, {"N": 2, "h": 4})
    assert md.startswith("# c\n") and headings(md) == SECTIONS
    for title, text in zip(SECTIONS, ["WHAT IT IS", "WHAT IT READ", "HOW IT LEARNED", "HOW IT DID", "WHAT IT CANNOT"]):
        assert section(md, title).startswith(f"\n{text}\n")
    assert "Architecture: N=2, h=4" in section(md, "Model")
    assert "12 in, 10 kept (dropped: 2 empty)" in section(md, "Training data") and "300 pieces" in md
    assert "Recipe: `scripts/recipes/c.sh`" in section(md, "Training procedure")
    assert "test (3 sentences, beam 4, alpha 0.6): BLEU 1.5, chrF 9.0" in section(md, "Evaluation")
    assert "bash scripts/recipes/c.sh" in section(md, "How to reproduce")
    assert "python scripts/evaluate.py checkpoints/c --split test" in section(md, "How to reproduce")
    assert card_markdown(card.to_dict(), {"N": 2, "h": 4}) == md             # a card.json dict reads as a Card


def test_the_pronoun_lines_name_the_held_out_anaphora_head():
    card = Card(name="c", pronouns={"items": 8, "accuracy": 0.5, "feminine": 0.25, "masc_neut": 0.75,
                                    "anaphora_head": {"layer": 6, "head": 5, "hit_rate_second_half": 0.261,
                                                      "chance": 0.105, "sentences_second_half": 23}})
    evaluation = section(card_markdown(card), "Evaluation")
    assert "50.0% overall, 25.0% with feminine antecedents" in evaluation
    assert "scored on the 23 sentences of the second): layer 6 head 5" in evaluation
    assert "in 26.1% of them (chance 10.5%)" in evaluation
    assert "Anaphora head" not in card_markdown(Card(name="c", pronouns={"items": 8, "accuracy": 0.5}))
    assert "genders told apart" not in evaluation                                 # an older card: no separation
    assert "random halvings" not in evaluation                                    # nor the halvings
    card.pronouns["anaphora_head"]["random_halvings"] = {"mean": 0.209, "p05": 0.087, "p95": 0.304, "splits": 1000,
                                                         "sentences_second_half": 23}
    assert "over 1000 random halvings of the set: 20.9% on average (5-95%: 8.7%-30.4%); one sentence of the second " \
           "half is 4.3%" in card_markdown(card)
    card.pronouns.update(separation=0.7151, feminine_lean=-0.7553)
    assert "separation 0.7151 (the chance" in card_markdown(card)
    assert "mean lean to ihr-/sie -0.76 nats" in card_markdown(card)


def test_the_history_becomes_a_table_in_training_procedure():
    rows = [{"date": "2026-11-30", "steps": "1-100", "change": "fresh run", "dev": "9.5, 3.1", "test": "2.0 / 20.1"},
            {"date": "2026-12-01", "steps": "101-200", "change": "warm start | cool-down", "dev": "8.0, 4.2",
             "test": "3.5 / 25.0"}]
    training = section(card_markdown(Card(name="c", training_notes="HOW", extra={"history": rows})),
                       "Training procedure")
    table = [line for line in training.splitlines() if line.startswith("|")]
    assert table[0] == "| date | steps | what changed | dev: perplexity, greedy BLEU | test: BLEU / chrF (beam 4) |"
    assert table[2] == "| 2026-11-30 | 1-100 | fresh run | 9.5, 3.1 | 2.0 / 20.1 |"
    assert table[3] == "| 2026-12-01 | 101-200 | warm start \\| cool-down | 8.0, 4.2 | 3.5 / 25.0 |"
    assert len(table) == 4 and training.index("HOW") < training.index("| date")
    assert "| date" not in card_markdown(Card(name="c", training_notes="HOW", extra={"history": []}))


@pytest.mark.parametrize("name", ["news-small", "multi30k-small"])
def test_the_shipped_cards_speak_in_short_paragraphs_and_dates(name):
    card = read_card(CHECKPOINTS / name)
    for field in ("notes", "data_notes", "training_notes", "evaluation_notes", "limitations"):
        for paragraph in (getattr(card, field) or "").split("\n\n"):
            assert len(paragraph.split()) <= 150, (field, paragraph[:60])
    assert card.extra["history"] and all(len(row["date"]) == 10 for row in card.extra["history"])
    assert not re.search(r"(?i)\bsessions? \d|\bissue \d", (CHECKPOINTS / name / "CARD.md").read_text())


def test_an_old_card_with_one_notes_paragraph_still_renders():
    md = card_markdown({"name": "old", "notes": "everything in one paragraph", "training": {"steps": 5}})
    assert headings(md) == ["Model", "Training procedure", "How to reproduce"]
    assert "everything in one paragraph" in section(md, "Model") and "No recipe was recorded" in md
    assert headings(card_markdown(Card(name="x", trained_here=False, source="elsewhere"))) == ["Model"]


@pytest.mark.parametrize("name", ["news-small", "multi30k-small"])
def test_the_shipped_card_md_is_made_from_card_json(name):
    """Regenerate with: python scripts/write_card.py checkpoints/NAME."""
    folder = CHECKPOINTS / name
    config = json.loads((folder / "config.json").read_text())
    md = card_markdown(read_card(folder), config)
    assert (folder / "CARD.md").read_text(encoding="utf-8") == md
    assert headings(md) == SECTIONS


def test_main_adds_notes_and_writes_card_md(tmp_path, capsys):
    (tmp_path / "card.json").write_text(json.dumps({"name": "t", "zzz": 1}))
    write_card.main([str(tmp_path), "--notes", "why"])
    assert json.loads((tmp_path / "card.json").read_text()) == {"name": "t", "zzz": 1, "notes": "why"}
    assert "why" in section((tmp_path / "CARD.md").read_text(), "Model")
    with pytest.raises(SystemExit, match="does not exist"):
        write_card.main([str(tmp_path / "none")])


def test_the_added_corpora_the_its_balance_and_the_figures_are_on_the_card():
    report = {"corpus": "../shared/data/a", "spm_from": "checkpoints/x/spm.model", "spm_vocab_size": 300,
              "splits": {"train": {"pairs_in": 30, "pairs_out": 29}},
              "extra": {"corpora": [{"corpus": "../shared/data/b", "pairs_in": 20, "taken": 18,
                                     "taken_by_kind": {"human": 8, "back": 10}}]},
              "its_balance": {"factor": 3.0, "pairs": {"ihr": 2, "sein": 3},
                              "extra_copies_of_each": {"ihr": 4, "sein": 2}, "added": 14, "train_pairs": 43}}
    figures = {"3": {"linked": True, "layer": 5, "head": 4, "score": 0.4121, "others": 0.133, "threshold": 0.4},
               "4": {"linked": False, "layer": 6, "head": 8, "score": 0.39, "others": 0.2, "threshold": 0.3846},
               "5": {"linked": None, "problem": "the tokenizer cannot spell 'law'"}}
    md = card_markdown(Card(name="c", data={"folder": "data/ab", "prep_report": report}, figures=figures))
    data = section(md, "Training data")
    assert "- Added: `../shared/data/b`, 18 of 20 pairs (human 8, back 10)" in data
    assert ("balance_its_pairs.py (factor 3.0): 2 ihr- pairs copied 4 more times, 3 sein- pairs copied 2 more times, "
            "14 pairs added: 43 training pairs") in data
    assert "kept from `checkpoints/x/spm.model`" in data
    evaluation = section(md, "Evaluation")
    assert "  - Figure 3: layer 5 head 4, 0.412 (others 0.133, threshold 0.40): linked" in evaluation
    assert "  - Figure 4: layer 6 head 8, 0.390 (others 0.200, threshold 0.38): not linked" in evaluation
    assert "  - Figure 5: the tokenizer cannot spell 'law'" in evaluation
    assert "python scripts/figure_links.py checkpoints/c --card" in section(md, "How to reproduce")
    plain = card_markdown(Card(name="c", data={"folder": "data/a", "prep_report": {"corpus": "../shared/data/a"}}))
    assert "Added" not in plain and "balanced" not in plain and "Figure 3" not in plain
