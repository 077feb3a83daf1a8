"""core.tokenizer_moses: FSMT's Moses + BPE with two vocabularies, and its pieces shown as words."""
import json

import pytest
from sacremoses import MosesTokenizer
from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, trainers

import core
from core.tokenizer_moses import MosesBPETokenizer, read_merges
from tests.helpers import CORPUS

TEXT = 'the "quick" dog, well-known & happy.'


def bpe(lines, lang):
    moses = MosesTokenizer(lang)
    tokens = [" ".join(moses.tokenize(line, aggressive_dash_splits=True, escape=True)) for line in lines]
    tok = HFTokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(tokens * 10, trainers.BpeTrainer(vocab_size=300, end_of_word_suffix="</w>",
                                                             special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]


@pytest.fixture(scope="module")
def moses() -> MosesBPETokenizer:
    src, src_merges = bpe(CORPUS[:3] + [TEXT], "en")
    tgt, tgt_merges = bpe(CORPUS[3:], "de")
    merges = read_merges("\n".join(src_merges + [m for m in tgt_merges if m not in src_merges]) + "\n")
    return MosesBPETokenizer(merges, {"src": src, "tgt": tgt}, {"src": "en", "tgt": "de"})


def test_read_merges_takes_the_pair_of_each_line():
    assert read_merges("a b 12\nab c\n\n") == [("a", "b"), ("ab", "c")]


def test_two_vocabularies(moses):
    assert len(moses) == moses.size("tgt") != moses.size("src")
    ids = moses.encode("the quick brown fox", "src")
    assert moses.raw_pieces(ids, "src")[-1].endswith("</w>")
    assert moses.decode(moses.encode("der schnelle Fuchs", "tgt"), "tgt") == "der schnelle Fuchs"


def test_pieces_are_shown_as_words(moses):
    ids = moses.encode(TEXT, "src")
    pieces = moses.pieces(ids + [2], "src")
    assert pieces[-1] == "</s>" and not any("</w>" in p or "&quot;" in p or "@-@" in p for p in pieces)
    assert core.merge_words(pieces[:-1]) == TEXT.split()                      # 'dog,' and 'well-known' one word each
    assert "".join(pieces[:-1]).replace(core.tokenizer.WORD_START, " ").strip() == TEXT


def test_saved_and_read_back_through_the_one_dispatch(moses, tmp_path):
    moses.save(tmp_path)
    again = core.Tokenizer.from_folder(tmp_path)
    assert isinstance(again, MosesBPETokenizer) and again.langs == moses.langs
    assert again.encode(TEXT, "src") == moses.encode(TEXT, "src")
    with pytest.raises(ValueError, match="subword dropout"):
        again.encode_many([TEXT], "src", dropout=0.1)
