"""Which training pairs of an extra corpus to take: by origin, a cap of translations per source sentence, and a
tag on the synthetic side (used by scripts/prepare_data.py --extra).

An extra corpus is train.{en,de} with a train.origin naming each pair's origin, e.g. `human/tatoeba-anki`,
`forward/wmt23/ONLINE-B` (real English, a system's German) or `back/wmt22/PROMT` (a system's English, real German).
"""
from __future__ import annotations

import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass

BACK = "back/"   # origins whose English side was made by a system (back-translation style)


@dataclass(frozen=True)
class Selection:
    """What to take of an extra corpus."""
    origins: tuple[str, ...] = ()   # origin prefixes to take, e.g. ("human", "forward/wmt23"); empty: all
    cap: int = 0                    # at most this many translations of one source sentence (0: no cap)
    tag_back: str = ""              # a token put before the English side of back/ pairs (Caswell et al. 2019)

    def takes(self, origin: str) -> bool:
        """Whether pairs of this origin are taken (a prefix matches whole path parts: "back" takes back/...)."""
        return not self.origins or any(origin == p.rstrip("/") or origin.startswith(p.rstrip("/") + "/")
                                       for p in self.origins)

    def describe(self) -> dict:
        """The selection as the prep report records it."""
        return {"origins": list(self.origins) or "all", "cap_per_source": self.cap or None,
                "tag_back": self.tag_back or None}


def kind(origin: str) -> str:
    """The first part of an origin (human, forward, back), or the whole name for a flat one (europarl-v7)."""
    return origin.split("/", 1)[0]


def source_key(en: str, de: str, origin: str) -> str:
    """The sentence a pair translates: German for back/ pairs, else English (case and spacing ignored)."""
    return " ".join((de if origin.startswith(BACK) else en).split()).casefold()


def select(rows, selection: Selection, seed: int = 1) -> tuple[list[bool], Counter]:
    """Which of the rows (en, de, origin) to keep, and how many were kept of each origin kind.

    With a cap, the pairs of one source sentence that are kept are the `cap` with the smallest hash of
    (seed, pair): a choice that does not depend on the file's order (systems are listed by year and name).
    """
    rows = list(rows)
    if not selection.cap:
        keep = [selection.takes(origin) for _, _, origin in rows]
    else:
        by_source = defaultdict(list)
        for i, (en, de, origin) in enumerate(rows):
            if selection.takes(origin):
                rank = zlib.crc32(f"{seed}\t{en}\t{de}".encode())
                by_source[source_key(en, de, origin)].append((rank, i))
        keep = [False] * len(rows)
        for ranked in by_source.values():
            for _, i in sorted(ranked)[: selection.cap]:
                keep[i] = True
    kinds = Counter(kind(origin) for (_, _, origin), k in zip(rows, keep) if k)
    return keep, kinds

