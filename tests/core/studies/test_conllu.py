"""core.studies.conllu: reading CoNLL-U (multiword tokens, empty nodes, readable errors for a garbled file), the
hand-made parse of the paper's Figure 5 sentence, and a typed sentence's automatic parse (a stand-in for spaCy)."""
from types import SimpleNamespace

import pytest

from core.studies import conllu
from core.studies.paper_figures import FIGURE45_SENTENCE
from tests.helpers import FIXTURES

MINI = FIXTURES / "syntax" / "mini.conllu"       # four hand-made sentences (multiword token, empty node, ...)


def test_read_conllu_skips_multiword_tokens_and_empty_nodes():
    s1, s2, s3, s4 = conllu.read_conllu(MINI)
    assert s1.text == "I don't like cats." and s1.sent_id == "mini-1"
    assert s1.words == ["I", "do", "n't", "like", "cats", "."]                # "2-3 don't" is not a word
    assert s1.heads == [3, 3, 3, -1, 3, 3]                                     # 0-based, -1 for the root
    assert s2.words == ["Mary", "eats", "apples", "and", "John", "pears", "."]  # the empty node 5.1 is left out
    assert s2.arcs()[-2:] == [(5, 4, "orphan"), (6, 1, "punct")]
    assert s3.text == "The dog's bone is big."              # no "# text": rebuilt from the tokens and SpaceAfter=No
    assert [r for _, _, r in s3.arcs()][:3] == ["det", "poss", "case"]        # nmod:poss is reported as poss
    assert ("obl" in {r for _, _, r in s4.arcs()}) and "obl:tmod" in s4.deprels
    assert s4.line > s3.line > s2.line > s1.line == 1           # its first line, comments included


def test_relation_is_the_universal_part():
    assert conllu.relation("obl:tmod") == "obl" and conllu.relation("nmod:poss") == "poss"
    assert conllu.relation("nmod") == "nmod" and conllu.relation("acl:relcl") == "acl"


@pytest.mark.parametrize("text, problem", [
    ("1\tI\tI\tPRON\n", "4 columns where 10 were expected"),
    ("1\tI\t_\t_\t_\t_\tx\tnsubj\t_\t_\n", "the HEAD column (7th) is 'x'"),
    ("1\tI\t_\t_\t_\t_\t0\troot\t_\t_\n3\tgo\t_\t_\t_\t_\t1\tx\t_\t_\n", "the word number is '3' but 2 was expected"),
    ("1\tI\t_\t_\t_\t_\t5\tnsubj\t_\t_\n", "word 1 has head 5, but the sentence has only 1 words"),
    ("1\tI\t_\t_\t_\t_\t0\t_\t_\t_\n", "has no DEPREL"),
    ("# just a comment\n", "no word lines"),
    ("\n\n", "holds no sentences"),
])
def test_garbled_conllu_is_a_readable_error(text, problem):
    with pytest.raises(conllu.SyntaxDataError) as e:
        conllu.parse_conllu(text, "x.conllu")
    assert problem in str(e.value) and "x.conllu" in str(e.value)


def test_read_conllu_errors(tmp_path, monkeypatch):
    with pytest.raises(conllu.SyntaxDataError, match="does not exist.*The default.*`python scripts/get_data.py eval`"):
        conllu.read_conllu(tmp_path / "missing.conllu")
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "empty"))      # no data yet: the command, no folder
    with pytest.raises(conllu.SyntaxDataError, match=r"not on this machine yet: `python scripts/get_data.py eval` "
                                                     r"\(3.8 MB\) fetches them.$") as e:
        conllu.read_conllu()
    assert str(tmp_path) not in str(e.value)
    with pytest.raises(conllu.SyntaxDataError, match="is a folder"):
        conllu.read_conllu(tmp_path)
    (tmp_path / "bin.conllu").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(conllu.SyntaxDataError, match="not UTF-8"):
        conllu.read_conllu(tmp_path / "bin.conllu")


# ----------------------------------------------------------------------------- the paper's Figure 5 sentence

def test_the_figure5_parse_reads_and_is_a_tree():
    s = conllu.read_figure5()
    assert s.text == FIGURE45_SENTENCE and len(s.words) == 25
    assert s.heads.count(-1) == 1 and s.words[s.heads.index(-1)] == "perfect"
    for w in range(len(s.words)):                            # every word has a head and reaches the root
        seen, x = set(), w
        while x != -1:
            assert x not in seen and 0 <= x < 25
            seen.add(x)
            x = s.heads[x]
    assert {"det", "nsubj", "aux", "cop", "conj", "cc", "poss", "parataxis", "acl", "obl", "case"} <= \
        {r for _, _, r in s.arcs()}
    assert all(d != "_" for d in s.deprels)


# ----------------------------------------------------------------------------- typed sentences: an automatic parse

def test_an_automatic_parse_of_a_typed_sentence_becomes_a_ud_sentence(monkeypatch):
    """spaCy is optional: a stand-in for its parse (tokens with .i, .text, .head, .dep_) gives a UDSentence, and
    without spaCy there is no parser at all."""
    parsed = [("Dogs", "nsubj"), ("bark", "ROOT"), (".", "punct")]
    toks = [SimpleNamespace(i=i, text=w, dep_=d) for i, (w, d) in enumerate(parsed)]
    for t, h in zip(toks, (1, 1, 1)):
        t.head = toks[h]
    sent = type("Sent", (), {"text": "Dogs bark.", "__getitem__": lambda self, k: toks[k],
                             "__iter__": lambda self: iter(toks)})()
    doc = SimpleNamespace(sents=[sent])
    s = conllu.automatic_parse(lambda text: doc, "Dogs bark.")
    assert (s.words, s.heads, s.deprels) == (["Dogs", "bark", "."], [1, -1, 1], ["nsubj", "root", "punct"])
    assert s.arcs() == [(0, 1, "nsubj"), (2, 1, "punct")]
    with pytest.raises(conllu.SyntaxDataError):
        conllu.automatic_parse(lambda text: doc, "  ")
    monkeypatch.setitem(__import__("sys").modules, "spacy", None)      # import spacy fails
    assert conllu.automatic_parser() is None
