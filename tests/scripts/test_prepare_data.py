"""scripts/prepare_data.py on small fixtures: cleaning, drops, SentencePiece, and readable errors."""
import json
import random
from pathlib import Path

import pytest
import sentencepiece as spm

from scripts import prepare_data as pd

# ---------------------------------------------------------------- cleaning


def test_normalize_nfkc_and_whitespace():
    assert pd.normalize("  ﬁne\u00a0ＡＢＣ x²  ") == "fine ABC x2"
    assert pd.normalize("Cafe\u0301") == "Café"  # combining accent is composed
    assert pd.normalize("a\tb\r\n c\u2028d") == "a b c d"


def test_normalize_control_and_invisible_chars():
    assert pd.normalize("a\x00b\x07c\x1b") == "abc"
    assert pd.normalize("Fuß\u00adball\u200b \ufeffist\u200e toll") == "Fußball ist toll"
    # C1 controls are cp1252 quotes decoded as Latin-1: repaired, not deleted
    assert pd.normalize("\x84Hallo\x93 don\x92t") == "\u201eHallo\u201c don\u2019t"
    assert pd.normalize("Coder 👩\u200d💻") == "Coder 👩\u200d💻"  # zero-width joiner kept


def test_drop_reason_each_reason():
    assert pd.drop_reason("", "Hallo") == "empty"
    assert pd.drop_reason("Hello", "") == "empty"
    assert pd.drop_reason("word " * 11, "Wort", max_words=10) == "too_long"
    assert pd.drop_reason("A good day.", "Ein guter Tag, an dem wir alle zusammen lange feierten.") == "ratio"
    assert pd.drop_reason("Yes.", "Ja, natürlich gerne.") is None  # too short for the ratio test
    assert pd.drop_reason("A good day.", "Ein guter Tag.") is None


# ---------------------------------------------------------------- corpus fixture

EN = "the cat sees a small house near the river and green trees over street nice tired size".split()
DE = "die Katze sieht ein kleines Haus nahe dem Fluss und grüne Bäume über Straße schön müde Größe".split()


def write_corpus(root: Path, splits: dict) -> Path:
    """Write {split: [(en, de), ...]} as root/split.en and root/split.de."""
    root.mkdir(parents=True, exist_ok=True)
    for split, pairs in splits.items():
        for i, lang in enumerate(("en", "de")):
            (root / f"{split}.{lang}").write_text("".join(p[i] + "\n" for p in pairs), encoding="utf-8")
    return root


def make_corpus(root: Path) -> Path:
    """A tiny corpus: 300 synthetic train pairs plus one pair for each drop reason."""
    rng = random.Random(0)
    train = []
    for _ in range(300):
        idx = [rng.randrange(len(EN)) for _ in range(rng.randint(4, 9))]
        train.append((" ".join(EN[i] for i in idx) + ".", " ".join(DE[i] for i in idx) + "."))
    train += [(" \t ", "Hallo"),                                    # empty after cleaning
              ("cat " * 30, "Katze " * 30),                         # too long (> 20 words)
              ("A good day.", "Ein guter Tag, an dem wir alle zusammen lange feierten."),  # ratio
              ("Yes.", "Ja, natürlich gerne.")]                      # kept: too short for ratio
    valid = [("the\x00 cat\u00a0sees.", "die Katze\tsieht."), ("", ""),
             ("A good day.", "Ein guter Tag, an dem wir alle zusammen lange feierten."),
             ("\x93Greetings\x94 😀", "\x84Grüße\x93 aus München 😀")]
    test = [("the house.", "das Haus."), (" ", "Haus")]
    return write_corpus(root, {"train": train, "valid": valid, "test": test})


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Run the whole preparation once on the tiny corpus; return (out folder, report)."""
    root = tmp_path_factory.mktemp("prep")
    corpus = make_corpus(root / "corpus")
    (corpus / "train.origin").write_text("synthetic\n" * 300 + "junk\n" * 4)
    out = root / "out"
    report = pd.prepare(corpus, out, vocab_size=400, max_len=20, progress=False)
    return out, report


def test_prepare_drops_only_train(prepared):
    out, report = prepared
    train = report["splits"]["train"]
    assert train["dropped"] == {"empty": 1, "too_long": 1, "ratio": 1}
    assert train["pairs_out"] == 301 and train["dropped_by_origin"] == {"junk": 3}
    assert report["splits"]["valid"]["flagged_but_kept"] == {"empty": 1, "too_long": 0, "ratio": 1}
    assert report["splits"]["test"]["flagged_but_kept"]["empty"] == 1
    assert json.loads((out / "prep_report.json").read_text())["settings"]["max_len_unit"] == "words"
    for split, n in (("train", 301), ("valid", 4), ("test", 2)):
        for name in (f"{split}.en", f"{split}.de") + (("train.origin",) if split == "train" else ()):
            assert (out / name).read_text(encoding="utf-8").count("\n") == n
    assert not list(out.glob("*.tmp")) and not list(out.glob(".spm-tmp*"))


def test_prepare_normalises_valid_in_place(prepared):
    out, _ = prepared
    en = (out / "valid.en").read_text(encoding="utf-8").split("\n")
    de = (out / "valid.de").read_text(encoding="utf-8").split("\n")
    assert en[:4] == ["the cat sees.", "", "A good day.", "\u201cGreetings\u201d 😀"]
    assert de[0] == "die Katze sieht." and de[3] == "\u201eGrüße\u201c aus München 😀"
    assert (out / "train.en").read_text(encoding="utf-8").splitlines()[-1] == "Yes."


def test_sentencepiece_ids_and_round_trip(prepared):
    out, report = prepared
    sp = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    assert (out / "spm.vocab").is_file() and sp.get_piece_size() == report["spm_vocab_size"] == 400
    assert [sp.id_to_piece(i) for i in range(4)] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (0, 1, 2, 3)
    texts = ("Schöne Grüße aus München, die Bäume sind grün.", "Größe über Straße 😀", "ÄÖÜ äöü ß")
    for text in texts:
        ids = sp.encode(text)
        assert pd.UNK_ID not in ids  # byte fallback: nothing becomes <unk>
        assert sp.decode(ids) == text


def test_cli_reports_drops(tmp_path, capsys):
    corpus = make_corpus(tmp_path / "c")
    assert pd.main(["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--vocab-size", "400",
                    "--max-len", "20", "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "train" in table and "301" in table and "(1)" in table


# ---------------------------------------------------------------- corpus errors


def test_missing_corpus_folder(tmp_path, capsys):
    assert pd.main(["--corpus", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 1
    assert "Corpus folder not found" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_split_files(tmp_path):
    write_corpus(tmp_path, {"train": [("a", "b")], "valid": [("a", "b")]})
    (tmp_path / "valid.de").unlink()
    with pytest.raises(pd.DataError, match=r"valid\.de, test\.en, test\.de"):
        pd.check_corpus(tmp_path)


def test_mismatched_line_counts(tmp_path):
    write_corpus(tmp_path, {s: [("a", "b"), ("c", "d")] for s in pd.SPLITS})
    (tmp_path / "valid.de").write_text("b\nd\ne", encoding="utf-8")  # 3 lines, last without newline
    with pytest.raises(pd.DataError, match="valid.en has 2 lines but valid.de has 3"):
        pd.check_corpus(tmp_path)


def test_stray_carriage_return_does_not_split_a_line(tmp_path):
    write_corpus(tmp_path, {s: [("a\rb", "c"), ("d", "e")] for s in pd.SPLITS})
    assert pd.check_corpus(tmp_path) == {"train": 2, "valid": 2, "test": 2}
    assert list(pd.read_lines(tmp_path / "train.en")) == ["a\rb", "d"]



# ---------------------------------------------------------------- extra corpora (--extra, scripts/data_mix.py)

EXTRA = [("the cat sees.", "die Katze sieht.", "human/tatoeba"),
         ("the cat sees.", "die Katze schaut.", "forward/wmt23/A"),
         ("the cat sees.", "Katze sieht.", "forward/wmt23/B"),
         ("the cat sees.", "die Katze sieht es.", "forward/wmt22/C"),
         ("a house sees.", "das Haus sieht.", "back/wmt23/A"),
         ("the house looks.", "das Haus sieht.", "back/wmt23/B")]


def write_extra(root: Path, rows=EXTRA) -> Path:
    """An extra corpus: train.{en,de,origin} only."""
    root.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(("train.en", "train.de", "train.origin")):
        (root / name).write_text("".join(r[i] + "\n" for r in rows), encoding="utf-8")
    return root


def test_extra_corpora_chosen_by_origin_capped_and_tagged(tmp_path):
    corpus, extra = make_corpus(tmp_path / "c"), write_extra(tmp_path / "x")
    out = tmp_path / "o"
    report = pd.prepare(corpus, out, vocab_size=400, max_len=20, progress=False, extras=[extra],
                        selection=pd.Selection(("forward", "back/wmt23"), cap=2, tag_back="<bt>"))
    taken = report["extra"]["corpora"][0]
    # 'the cat sees.' has 3 forward translations, capped to 2 (the human one is not taken); both back pairs
    # translate 'das Haus sieht.' (German is the source side of a back pair): 2, within the cap
    assert taken["pairs_in"] == 6 and taken["taken"] == 4 and taken["taken_by_kind"] == {"forward": 2, "back": 2}
    assert report["extra"]["selection"] == {"origins": ["forward", "back/wmt23"], "cap_per_source": 2,
                                            "tag_back": "<bt>"}
    en = (out / "train.en").read_text(encoding="utf-8").splitlines()
    origins = (out / "train.origin").read_text(encoding="utf-8").splitlines()
    assert len(en) == len(origins) == 301 + 4 and origins[:301] == ["c"] * 301   # the corpus's own, named by folder
    assert en[-2:] == ["<bt> a house sees.", "<bt> the house looks."]
    assert len(set(origins[301:303])) == 2 and all(o.startswith("forward/") for o in origins[301:303])
    sp = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    assert "<bt>" in sp.encode("<bt> a", out_type=str)                     # the tag is one piece of its own


def test_a_kept_sentencepiece_model_is_copied_not_trained(prepared, tmp_path):
    model = prepared[0] / "spm.model"
    corpus, extra = make_corpus(tmp_path / "c"), write_extra(tmp_path / "x")
    report = pd.prepare(corpus, tmp_path / "o", max_len=20, progress=False, extras=[extra], spm_model=model)
    assert (tmp_path / "o" / "spm.model").read_bytes() == model.read_bytes()
    assert report["extra"]["corpora"][0]["taken"] == 6 and report["spm_vocab_size"] == 400
    assert report["spm_from"].endswith("spm.model")
    with pytest.raises(pd.DataError, match="SentencePiece model not found"):
        pd.prepare(corpus, tmp_path / "o2", progress=False, spm_model=tmp_path / "none.model")


def test_extra_corpus_errors_name_the_files(tmp_path, capsys):
    corpus = make_corpus(tmp_path / "c")
    extra = write_extra(tmp_path / "x")
    (extra / "train.origin").write_text("human/a\n")                       # 1 line for 6 pairs
    with pytest.raises(pd.DataError, match=r"have \[6, 6, 1\] lines"):
        pd.prepare(corpus, tmp_path / "o", progress=False, extras=[extra])
    (extra / "train.origin").unlink()
    assert pd.main(["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--extra", str(extra)]) == 1
    assert "missing train.origin" in capsys.readouterr().err
    with pytest.raises(SystemExit):                                         # --cap without --extra
        pd.main(["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--cap", "2"])
    assert "give --extra DIR" in capsys.readouterr().err


def test_a_misaligned_origin_file_is_an_error_not_a_silent_cut(tmp_path):
    corpus = make_corpus(tmp_path / "c")
    (corpus / "train.origin").write_text("synthetic\n" * 5)
    with pytest.raises(pd.DataError, match="does not have 304 lines"):
        pd.prepare(corpus, tmp_path / "o", progress=False)


def test_selection_prefixes_match_whole_parts():
    sel = pd.Selection(("back", "human/tatoeba"))
    assert sel.takes("back/wmt21/X") and sel.takes("human/tatoeba") and not sel.takes("backup/x")
    assert not sel.takes("human/tatoeba-anki") and pd.Selection().takes("anything")
