"""core.tokenizer_json: a tokenizer.json (NLLB's kind), read with the `tokenizers` library"""
import pytest
from tokenizers import AddedToken, Tokenizer as HFTokenizer, decoders, models, pre_tokenizers, trainers

import core
from core.tokenizer_json import JsonTokenizer
from tests.helpers import CORPUS

LANGS = ["eng_Latn", "deu_Latn"]


@pytest.fixture(scope="module")
def tokenizer_json() -> str:
    """A tiny BPE tokenizer.json with SentencePiece's ▁, fairseq's specials 0..3 and two language tokens."""
    tok = HFTokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.train_from_iterator(CORPUS * 10, trainers.BpeTrainer(vocab_size=150,
                                                             special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    tok.add_special_tokens([AddedToken(t, special=True) for t in LANGS])
    return tok.to_str()


def test_encode_pieces_decode(tokenizer_json):
    tok = JsonTokenizer(tokenizer_json)
    ids = tok.encode("the quick brown fox")
    assert ids and all(i not in (0, 1, 2) for i in ids)                       # no specials added
    pieces = tok.pieces(ids)
    assert pieces[0].startswith(core.tokenizer.WORD_START)
    assert core.merge_words(pieces) == ["the", "quick", "brown", "fox"]
    lang = tok.token_id("deu_Latn")
    assert tok.decode([lang] + ids + [2]) == "the quick brown fox"              # language token and </s> left out
    assert tok.encode_many(["two young girls", "the dog"]) == [tok.encode("two young girls"), tok.encode("the dog")]


def test_a_model_vocabulary_larger_than_the_file(tokenizer_json):
    known = JsonTokenizer(tokenizer_json)
    tok = JsonTokenizer(tokenizer_json, vocab_size=len(known) + 2)
    assert len(tok) == len(known) + 2
    assert tok.pieces([len(known) + 1]) == ["<unk>"] and tok.decode([len(known) + 1]) == ""
    with pytest.raises(ValueError, match="more than the model's"):
        JsonTokenizer(tokenizer_json, vocab_size=10)


def test_saved_and_read_back_through_the_one_dispatch(tokenizer_json, tmp_path):
    tok = JsonTokenizer(tokenizer_json, vocab_size=300)
    tok.save(tmp_path)
    again = core.Tokenizer.from_folder(tmp_path)
    assert isinstance(again, JsonTokenizer) and len(again) == 300
    assert again.encode(CORPUS[1]) == tok.encode(CORPUS[1])


def test_readable_errors(tokenizer_json):
    with pytest.raises(ValueError, match="could not be read by the tokenizers library"):
        JsonTokenizer("{not json")
    with pytest.raises(ValueError, match="subword dropout"):
        JsonTokenizer(tokenizer_json).encode_many(["the dog"], dropout=0.1)
