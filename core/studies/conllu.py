"""Dependency parses as UDSentence: read from CoNLL-U files (gold), or made by spaCy for typed text.

read_conllu and parse_conllu read UD treebanks (default: ud_english_dev(), UD English EWT dev, read in place);
read_figure5 the paper's Figure 4/5 sentence, parsed by hand; automatic_parse a typed sentence (spaCy, optional).
SyntaxDataError is the error for a file or sentence that cannot be used. core.studies.syntax scores heads on them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.datasets import how_to_get
from core.paths import shared_eval
from core.tokenizer import clean_text

# evaluation data only: read in place outside the project (core/paths.py), never copied in
def ud_english_dev() -> Path:
    """The UD English EWT dev file, read in place (core.paths; resolved per call, so ATTN_EXPLORER_SHARED moves it)."""
    return shared_eval("ud-english-ewt", "en_ewt-ud-dev.conllu")
# a gold parse of the paper's Figure 4/5 sentence (core.studies.paper_figures.FIGURE45_SENTENCE), made by hand
FIGURE5_PARSE = Path(__file__).parent / "probes" / "figure5_en.conllu"
COLUMNS = "ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC".split()
FORMAT = (f"a CoNLL-U file has one line per word (10 columns separated by tabs: {' '.join(COLUMNS)}) and a blank "
          f"line after each sentence")


class SyntaxDataError(ValueError):
    """A CoNLL-U file or a sentence that cannot be used, worded for the person who gave it."""


# --------------------------------------------------------------------------- reading CoNLL-U

@dataclass
class UDSentence:
    """One gold-parsed sentence: its words (multiword tokens and empty nodes left out) and their heads."""
    text: str                 # the raw sentence (`# text = `), what the model reads
    words: list               # FORM of each word
    heads: list               # 0-based index of each word's head; -1 for the root
    deprels: list             # DEPREL of each word, as written ("nmod:poss", "obl:tmod", ...)
    sent_id: str | None = None
    line: int = 0             # 1-based line of the sentence's first line in its file

    @property
    def where(self) -> str:
        return self.sent_id or f"line {self.line}"

    def arcs(self) -> list[tuple[int, int, str]]:
        """(dependent, head, relation) of every word but the root, 0-based."""
        return [(d, h, relation(r)) for d, (h, r) in enumerate(zip(self.heads, self.deprels)) if h >= 0]


def relation(deprel: str) -> str:
    """The universal relation of a DEPREL: the part before ':' ("obl:tmod" -> "obl"); "nmod:poss" -> "poss"."""
    return "poss" if deprel == "nmod:poss" else deprel.split(":")[0]


def _text_from_tokens(tokens: list[tuple[str, str]]) -> str:
    """The raw sentence from (FORM, MISC) of the surface tokens, for a sentence without `# text = `."""
    return "".join(form + ("" if "SpaceAfter=No" in misc.split("|") else " ") for form, misc in tokens).strip()


def parse_conllu(text: str, name: str = "the CoNLL-U text") -> list[UDSentence]:
    """The sentences of CoNLL-U text; SyntaxDataError, naming the line, for anything it cannot read."""
    sentences, block = [], []
    lines = text.splitlines()
    for k, line in enumerate(lines + [""], 1):
        if line.strip():
            block.append((k, line))
        elif block:
            sentences.append(_sentence(block, name))
            block = []
    if not sentences:
        raise SyntaxDataError(f"{name} holds no sentences: {FORMAT}.")
    return sentences


def _sentence(block: list[tuple[int, str]], name: str) -> UDSentence:
    """One sentence's lines (line number, text) -> UDSentence."""
    text = sent_id = None
    words, heads, deprels, surface, covered = [], [], [], [], 0
    for k, line in block:
        where = f"{name}, line {k}"
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep and key.strip() == "text":
                text = value.strip()
            elif sep and key.strip() == "sent_id":
                sent_id = value.strip()
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise SyntaxDataError(f"{where}: {len(cols)} columns where 10 were expected. Is this a CoNLL-U file? "
                                  f"({FORMAT}.)")
        wid, form, head, deprel, misc = cols[0], cols[1], cols[6], cols[7], cols[9]
        if "." in wid:                                       # an empty node (5.1): no word of the sentence
            continue
        if "-" in wid:                                       # a multiword token (3-4): its words follow
            first, _, last = wid.partition("-")
            if not (first.isdigit() and last.isdigit()):
                raise SyntaxDataError(f"{where}: cannot read the token range '{wid}' (expected e.g. 3-4).")
            surface.append((form, misc))
            covered = int(last)
            continue
        if not wid.isdigit() or int(wid) != len(words) + 1:
            raise SyntaxDataError(f"{where}: the word number is '{wid}' but {len(words) + 1} was expected "
                                  f"(words count 1, 2, 3, ... in each sentence).")
        if not head.isdigit():
            raise SyntaxDataError(f"{where}: the HEAD column (7th) is '{head}', not the number of a word "
                                  f"(0 for the root).")
        if not deprel or deprel == "_":
            raise SyntaxDataError(f"{where}: the word '{form}' has no DEPREL (8th column).")
        if int(wid) > covered:
            surface.append((form, misc))
        words.append(form)
        heads.append(int(head) - 1)
        deprels.append(deprel)
    first_line = block[0][0]
    if not words:
        raise SyntaxDataError(f"{name}, line {first_line}: a sentence with comment lines (#) but no word lines. "
                              f"Is this a CoNLL-U file? ({FORMAT}.)")
    bad = [i for i, h in enumerate(heads) if h >= len(words)]
    if bad:
        raise SyntaxDataError(f"{name}, sentence at line {first_line}: word {bad[0] + 1} has head {heads[bad[0]] + 1}, "
                              f"but the sentence has only {len(words)} words.")
    return UDSentence(text if text is not None else _text_from_tokens(surface), words, heads, deprels, sent_id,
                      first_line)


def read_conllu(path=None) -> list[UDSentence]:
    """The sentences of a CoNLL-U file (None: ud_english_dev()); SyntaxDataError with a readable message for a
    missing or garbled one."""
    path = Path(path) if path is not None else ud_english_dev()
    if path.is_dir():
        raise SyntaxDataError(f"{path} is a folder: give the CoNLL-U file itself (e.g. {ud_english_dev().name}).")
    if not path.is_file():
        get = how_to_get("eval")
        if path == ud_english_dev():
            raise SyntaxDataError(f"The gold parses (UD English EWT dev) are not on this machine yet: {get} "
                                  "fetches them.")
        raise SyntaxDataError(f"The CoNLL-U file {path} does not exist. The default, UD English EWT dev, comes with "
                              f"{get}.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SyntaxDataError(f"{path} is not UTF-8 text ({e}): is it a CoNLL-U file?") from None
    return parse_conllu(text, path.name)


# --------------------------------------------------------------------------- the paper's Figure 5 sentence

def read_figure5() -> UDSentence:
    """The hand-made gold parse of the paper's Figure 4/5 sentence (probes/figure5_en.conllu)."""
    return read_conllu(FIGURE5_PARSE)[0]


# --------------------------------------------------------------------------- typed sentences: an automatic parse

SPACY_MODEL = "en_core_web_sm"


def automatic_parser():
    """spaCy's English pipeline when spaCy and its model are installed (optional, never required), else None."""
    try:
        import spacy
        return spacy.load(SPACY_MODEL)
    except Exception:                                    # not installed, no model, a broken install: no parser
        return None


def automatic_parse(nlp, text: str) -> UDSentence:
    """A typed sentence parsed by spaCy (an automatic parse, not gold; spaCy's labels, close to UD's); the
    first sentence if it finds several. SyntaxDataError for an empty text."""
    text = clean_text(text or "")
    if not text:
        raise SyntaxDataError("type a sentence to parse")
    sent = next(iter(nlp(text).sents))
    base = sent[0].i
    return UDSentence(sent.text, [t.text for t in sent],
                      [-1 if t.head.i == t.i else t.head.i - base for t in sent],
                      ["root" if t.head.i == t.i else t.dep_.lower() for t in sent], "typed (automatic parse)")
