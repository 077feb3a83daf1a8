"""The model card (card.json): how a checkpoint was made and how it scored, as one typed record.

Every reader and writer of card.json goes through `read_card` and `update_card`. A card from an older version
(fewer fields) reads with defaults; keys this version does not know are kept in `extra` and written back, and a
card written back keeps the order of the keys it was read with (new ones go beside their neighbours).
The sections that scripts fill in are plain dicts with the keys documented beside them. The prose fields (notes,
data_notes, training_notes, evaluation_notes, limitations) are written by hand; scripts/write_card.py makes each
the opening of one section of CARD.md (Model, Training data, Training procedure, Evaluation, Limitations).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from core.paths import from_portable

from .atomic import write_json

CARD_FILE = "card.json"


@dataclass
class Card:
    """A checkpoint's card. Fields left at their default are not written to card.json (unless it had them)."""

    name: str = "checkpoint"
    trained_here: bool = True
    notes: str | None = None            # the model: what it is, why these sizes and this layout (prose, by hand)
    data_notes: str | None = None       # the training data: what it is, where it came from (prose)
    training_notes: str | None = None   # the training procedure: sessions, schedule, stopping (prose)
    evaluation_notes: str | None = None  # the scores in context: earlier steps, comparisons (prose)
    limitations: str | None = None      # what it does badly, what not to use it for (prose)
    recipe: str | None = None           # the file of the exact commands that made it (scripts/recipes/...)
    source: str | None = None           # an imported model: where it came from
    credit: str | None = None           # an imported model: whom to credit
    note: str | None = None             # a model that is not a trained checkpoint (the untrained fallback)
    data: dict = field(default_factory=dict)        # {"folder": "data/wmt-en-de", "prep_report": {...}}
    training: dict = field(default_factory=dict)    # {"preset", "steps", "epochs", "target_tokens", "wall_time_s", ...}
    parameters: int | None = None
    dev_last: dict | None = None        # the last validation: {"loss", "nll", "ppl", "source_gain", "bleu", ...}
    dev_best_bleu: float | None = None
    dev_best_bleu_step: int | None = None
    stopped_by: str | None = None       # "patience", "max_steps", "epochs", "max_minutes" or "signal"
    demo: dict | None = None            # {"domain": "captions" | "news", "sentences": [...]}: the first screen
    valid: dict | None = None           # scripts/evaluate.py --split valid: {"bleu", "chrf", "sentences", ...}
    test: dict | None = None            # scripts/evaluate.py --split test
    pronouns: dict | None = None        # scripts/evaluate_pronouns.py
    alignment: dict | None = None       # scripts/evaluate_alignment.py
    syntax: dict | None = None          # scripts/evaluate_syntax.py: syntactic heads by relation and layer
    figures: dict | None = None         # scripts/figure_links.py --card: the paper's Figures 3 and 4, head and score
    extra: dict = field(default_factory=dict)       # keys this version does not know, kept as they were

    @classmethod
    def from_dict(cls, d: dict | None) -> Card:
        """A card from card.json's dict (or an older or partial one); wrong-typed sections read as empty."""
        d = dict(d or {})
        keys = list(d)
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        card = cls(**{k: d.pop(k) for k in list(d) if k in known})
        for name in ("data", "training"):
            if not isinstance(getattr(card, name), dict):
                setattr(card, name, {})
        card.extra = d
        card._order = list(keys)            # written back in this order (to_dict)
        return card

    def to_dict(self) -> dict:
        """card.json's dict: the fields that differ from their defaults (or that it was read with, unless set to
        None), then the unknown keys. A card read from a dict keeps that dict's key order; a key it did not have
        goes after the field before it."""
        out, read = {}, getattr(self, "_order", ())
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if value != default or f.name == "name" or (f.name in read and value is not None):   # None: left out
                out[f.name] = value
        out = {**out, **self.extra}
        order = [k for k in read if k in out]
        for k in out:                       # keys it was not read with: after their neighbour in `out`
            if k not in order:
                before = list(out)[: list(out).index(k)]
                at = max((order.index(b) + 1 for b in before if b in order), default=len(order))
                order.insert(at, k)
        return {k: out[k] for k in order}

    @property
    def steps(self) -> int:
        """Training steps (0 for a model not trained here)."""
        return int(self.training.get("steps") or 0)

    @property
    def data_name(self) -> str | None:
        """The data folder the card names (data["folder"]), as written there, or None."""
        return self.data.get("folder") or None

    @property
    def prep_report(self) -> dict:
        """scripts/prepare_data.py's report on the training data (empty when the card has none)."""
        report = self.data.get("prep_report")
        return report if isinstance(report, dict) else {}

    @property
    def corpus(self) -> Path | None:
        """The raw corpus the training data was prepared from, as its report names it, or None."""
        corpus = self.prep_report.get("corpus")
        return from_portable(corpus) if isinstance(corpus, str) and corpus else None

    def data_folder(self, root) -> Path | None:
        """The existing data folder the card names, relative to here or to `root`, or None."""
        if not self.data_name:
            return None
        path = Path(self.data_name)
        for folder in ([path] if path.is_absolute() else [path, Path(root) / path]):
            if folder.is_dir():
                return folder
        return None


def as_card(card: Card | dict | None) -> Card:
    """A Card from a Card, a card.json dict or None (a default card)."""
    return card if isinstance(card, Card) else Card.from_dict(card)


def read_card(folder) -> Card:
    """The card of a checkpoint folder; a default card (named after the folder) when it has none.

    Raises ValueError with a readable message when card.json is not valid JSON.
    """
    folder = Path(folder)
    path = folder / CARD_FILE
    if not path.exists():
        return Card(name=folder.name)
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON ({e}): fix or delete it") from None
    if not isinstance(d, dict):
        raise ValueError(f"{path} should hold a JSON object (a card), not {type(d).__name__}")
    return Card.from_dict(d)


def write_card(folder, card: Card) -> None:
    """Write card.json atomically."""
    write_json(Path(folder) / CARD_FILE, card.to_dict())


def update_card(folder, **fields) -> Card:
    """Read the folder's card afresh, set `fields` (Card field names) and write it back atomically.

    Re-reading just before writing keeps what another script wrote meanwhile (evaluation runs take minutes).
    """
    card = read_card(folder)
    for key, value in fields.items():
        if not hasattr(card, key) or key == "extra":
            raise TypeError(f"a card has no field {key!r}")
        setattr(card, key, value)
    write_card(folder, card)
    return card
