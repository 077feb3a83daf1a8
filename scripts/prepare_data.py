"""Clean a parallel English-German corpus and train one shared SentencePiece BPE model.

Usage (from the repo root):
    python scripts/prepare_data.py --corpus ../shared/data/wmt-en-de --out data/wmt-en-de
    python scripts/prepare_data.py --corpus ../shared/data/multi30k --out data/multi30k
    python scripts/prepare_data.py --corpus ../shared/data/wmt-en-de --extra ../shared/data/en-de-extra \
        --origins human forward --cap 4 --spm-model checkpoints/news-small/spm.model --out data/news-mix
Options: --vocab-size 8000  --max-len 250 (words)  --ratio 2.5  --spm-sample 1000000

The corpus folder must hold aligned train/valid/test .en/.de files (UTF-8, one sentence a line).
--extra adds training pairs from more folders (train.{en,de} and train.origin), chosen by origin
(--origins, prefixes such as human, forward, back/wmt23), at most --cap translations per source
sentence, the English side of back-translated pairs tagged with --tag-back (scripts/data_mix.py).
--spm-model keeps an existing SentencePiece model (a warm start must keep its checkpoint's pieces).
Writes to OUT: {train,valid,test}.{en,de} (cleaned), train.origin (if a corpus has one),
spm.model + spm.vocab (ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>) and prep_report.json, which records
what was taken from each corpus.

Every split is normalised the same way (see `normalize`). Only TRAIN pairs are dropped; valid and
test keep every line so that line numbers stay aligned with the references (valid line 8 and line
1053 are the sentences of the paper's figures). Their would-be drops are only counted, as "flagged".
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
import unicodedata
from collections import Counter
from pathlib import Path

from core.checkpoint.atomic import atomic_open, atomic_write, write_json
from core.paths import portable, shared_data
from scripts.data_mix import BACK, Selection, select

DEFAULT_CORPUS = shared_data("wmt-en-de")
SPLITS = ("train", "valid", "test")
LANGS = ("en", "de")
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
REASONS = ("empty", "too_long", "ratio")
# The length-ratio test only applies when both sides have at least this many characters:
# short pairs like "Yes." / "Ja, natürlich." are legitimately lopsided.
RATIO_MIN_CHARS = 10
# Invisible format characters that only disturb tokenisation (soft hyphen, zero-width space,
# direction marks, word joiner, BOM, bidi embeddings). Zero-width joiner U+200D is kept: emoji need it.
_INVISIBLE = {0x00AD, 0x200B, 0x200E, 0x200F, 0x2060, 0xFEFF, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


class DataError(Exception):
    """A problem with the input corpus, worded so that a student knows what to fix."""


# ---------------------------------------------------------------- cleaning (pure functions)

def _fix_c1(ch: str) -> str:
    """Map a C1 control character (U+0080-U+009F) to the Windows-1252 character it stands for.

    Such characters are mojibake: cp1252 bytes decoded as Latin-1. newstest2008 has hundreds of
    them where quotes and dashes should be (U+0093 = left double quote); deleting them would glue
    words together ("don\\x92t" -> "dont"). Codes undefined in cp1252 become "".
    """
    try:
        return bytes([ord(ch)]).decode("cp1252")
    except UnicodeDecodeError:
        return ""


def normalize(text: str) -> str:
    """Return `text` repaired, NFKC-normalised, without control characters, whitespace collapsed."""
    text = "".join(_fix_c1(c) if "\x80" <= c <= "\x9f" else c for c in text)
    text = unicodedata.normalize("NFKC", text)
    # Whitespace controls (tab, CR, ...) become spaces; other controls and invisibles are removed.
    text = "".join(
        " " if c.isspace() else c
        for c in text
        if c.isspace() or (unicodedata.category(c) != "Cc" and ord(c) not in _INVISIBLE)
    )
    return " ".join(text.split())


def drop_reason(en: str, de: str, max_words: int = 250, max_ratio: float = 2.5) -> str | None:
    """Return why a (normalised) pair should be dropped from training, or None to keep it.

    "empty": either side is empty.  "too_long": either side has more than `max_words`
    whitespace-separated words (as Moses' clean-corpus-n.perl counts).  "ratio": both sides have
    at least RATIO_MIN_CHARS characters and the longer is more than `max_ratio` times the shorter
    (in characters), which usually means a misaligned pair.
    """
    if not en or not de:
        return "empty"
    if len(en.split()) > max_words or len(de.split()) > max_words:
        return "too_long"
    short, long_ = sorted((len(en), len(de)))
    if short >= RATIO_MIN_CHARS and long_ > max_ratio * short:
        return "ratio"
    return None


# ---------------------------------------------------------------- files

def count_lines(path: Path) -> int:
    """Count lines the way `wc -l` would, plus a last line that has no final newline."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def check_corpus(corpus: Path) -> dict[str, int]:
    """Check that all six split files exist and that .en and .de have equal line counts.

    Returns {split: number of lines}; raises DataError with an explanation otherwise.
    """
    corpus = Path(corpus)
    if not corpus.is_dir():
        raise DataError(f"Corpus folder not found: {corpus}\n"
                        f"  Pass --corpus DIR, a folder holding train/valid/test .en and .de files; "
                        f"`python scripts/get_data.py multi30k` or `... wmt` fetches one (docs/data.md).")
    missing = [f"{s}.{lang}" for s in SPLITS for lang in LANGS if not (corpus / f"{s}.{lang}").is_file()]
    if missing:
        raise DataError(f"Missing file(s) in {corpus}: {', '.join(missing)}\n"
                        f"  Expected aligned files train.en/train.de, valid.en/valid.de, test.en/test.de.")
    counts = {}
    for split in SPLITS:
        n_en, n_de = (count_lines(corpus / f"{split}.{lang}") for lang in LANGS)
        if n_en != n_de:
            raise DataError(f"{split}.en has {n_en} lines but {split}.de has {n_de} lines in {corpus}.\n"
                            f"  Line i of {split}.en must translate line i of {split}.de; the files are not aligned.")
        counts[split] = n_en
    return counts


def read_lines(path: Path):
    """Yield the lines of a UTF-8 file without their newline.

    Only "\\n" ends a line (newline="\\n"): Python's default would also split at a stray "\\r"
    and silently shift every following line against the other language.
    """
    with open(path, encoding="utf-8", newline="\n") as f:
        i = 0
        try:
            for i, line in enumerate(f, 1):  # noqa: B007  (i names the line in the error below)
                yield line.rstrip("\n")
        except UnicodeDecodeError as e:
            raise DataError(f"{path} is not valid UTF-8 (near line {i + 1}): {e}") from None


def check_extra(folder: Path) -> int:
    """Check an extra training corpus (train.en, train.de, train.origin aligned); return its number of pairs."""
    folder = Path(folder)
    paths = [folder / f"train.{x}" for x in (*LANGS, "origin")]
    missing = [p.name for p in paths if not p.is_file()]
    if not folder.is_dir() or missing:
        raise DataError(f"Extra corpus {folder}: missing {', '.join(missing) or 'folder'}\n"
                        f"  --extra takes folders holding train.en, train.de and train.origin (one origin a line).")
    counts = [count_lines(p) for p in paths]
    if len(set(counts)) > 1:
        raise DataError(f"Extra corpus {folder}: train.en, train.de and train.origin have {counts} lines.\n"
                        f"  Line i of each file must belong to the same pair; the files are not aligned.")
    return counts[0]


def extra_rows(folder: Path, n_lines: int, selection: Selection, progress: bool):
    """The chosen (en, de, origin) rows of an extra corpus, raw, and how many of each kind were taken."""
    from tqdm import tqdm

    rows = zip(*(read_lines(Path(folder) / f"train.{x}") for x in (*LANGS, "origin")))
    rows = list(tqdm(rows, total=n_lines, desc=f"read {Path(folder).name}", unit=" pairs", disable=not progress))
    keep, kinds = select(rows, selection)
    return [r for r, k in zip(rows, keep) if k], kinds


def clean_split(corpus: Path, out: Path, split: str, n_lines: int, max_words: int, max_ratio: float,
                progress: bool = True, extra=(), tag_back: str = "") -> dict:
    """Normalise one split into OUT/{split}.{en,de}; drop bad pairs only if split == "train".

    A train.origin file next to train.en is filtered in step. `extra`: more (en, de, origin) training rows,
    appended after the corpus's own (train only); `tag_back` goes before the English side of back/ rows.
    Returns the split's statistics.
    """
    from tqdm import tqdm

    drop = split == "train"
    sources = [corpus / f"{split}.{lang}" for lang in LANGS]
    targets = [out / f"{split}.{lang}" for lang in LANGS]
    origin = corpus / "train.origin"
    has_origin = drop and origin.is_file()
    if has_origin and count_lines(origin) != n_lines:
        raise DataError(f"{origin} does not have {n_lines} lines like {split}.en: each pair needs its origin on the "
                        f"same line.\n  Fix or remove {origin.name}.")
    if has_origin:
        sources.append(origin)
    if has_origin or extra:
        targets.append(out / "train.origin")
    rows = zip(*(read_lines(s) for s in sources))
    if extra:   # the corpus's own pairs get their origin, or the corpus's name, beside the extra ones
        rows = (r if has_origin else (*r, corpus.name) for r in rows)
        rows = itertools.chain(rows, extra)
    reasons, by_origin, changed, kept = Counter(), Counter(), 0, 0
    with contextlib.ExitStack() as stack:
        # each file replaces its old one only when the whole split is written: a crash never leaves half a split
        files = [stack.enter_context(atomic_open(t, "w", newline="\n")) for t in targets]
        for row in tqdm(rows, total=n_lines + len(extra), desc=f"clean {split}", unit=" pairs",
                        disable=not progress):
            en, de = normalize(row[0]), normalize(row[1])
            changed += (en != row[0]) + (de != row[1])
            reason = drop_reason(en, de, max_words, max_ratio)
            if reason:
                reasons[reason] += 1
                if drop and len(row) > 2:
                    by_origin[row[2]] += 1
                if drop:
                    continue
            if tag_back and len(row) > 2 and row[2].startswith(BACK):
                en = f"{tag_back} {en}"
            kept += 1
            for f, text in zip(files, (en, de, *row[2:])):
                f.write(text + "\n")
    stats = {"pairs_in": n_lines + len(extra), "pairs_out": kept, "lines_changed_by_normalisation": changed,
             ("dropped" if drop else "flagged_but_kept"): {r: reasons[r] for r in REASONS}}
    if by_origin:
        stats["dropped_by_origin"] = dict(by_origin.most_common())
    return stats


# ---------------------------------------------------------------- SentencePiece

def train_spm(inputs: list[Path], out: Path, vocab_size: int, sample: int = 1_000_000, seed: int = 1,
              symbols: tuple[str, ...] = ()) -> Path:
    """Train one BPE model on all `inputs` (both languages) and write OUT/spm.model + OUT/spm.vocab.

    One shared vocabulary as in the paper (it also lets the embeddings be tied). byte_fallback
    spells any character missing from the vocabulary as UTF-8 bytes, so emoji or other scripts
    never become <unk>. `sample` caps the sentences used (0 = all); more rarely changes the pieces.
    `symbols` (e.g. a back-translation tag) become pieces of their own, never split.
    """
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)  # the sentence sample is random; keep runs reproducible
    prefix = out / ".spm-tmp"
    try:
        spm.SentencePieceTrainer.train(
            input=[str(p) for p in inputs], model_prefix=str(prefix), vocab_size=vocab_size,
            model_type="bpe", character_coverage=0.9999, byte_fallback=True,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
            input_sentence_size=sample, shuffle_input_sentence=True, max_sentence_length=16384,
            num_threads=min(4, os.cpu_count() or 1), minloglevel=1, user_defined_symbols=list(symbols),
        )
    except RuntimeError as e:
        for suffix in (".model", ".vocab"):
            Path(f"{prefix}{suffix}").unlink(missing_ok=True)
        raise DataError(f"SentencePiece training failed: {e}\n"
                        f"  If it says the vocabulary size is too high, try a smaller --vocab-size.") from None
    for suffix in (".model", ".vocab"):  # both files appear together, complete
        os.replace(f"{prefix}{suffix}", out / f"spm{suffix}")
    return out / "spm.model"


# ---------------------------------------------------------------- driver

def format_report(report: dict) -> str:
    """Return the drop counts as a small text table (valid/test counts are flagged, not dropped)."""
    lines = [f"{'split':<6} {'pairs in':>9} {'empty':>7} {'too_long':>9} {'ratio':>7} {'pairs out':>10}"]
    for split in SPLITS:
        s = report["splits"][split]
        c = s.get("dropped") or s["flagged_but_kept"]
        fmt = "{}" if "dropped" in s else "({})"
        cells = [fmt.format(c[r]) for r in REASONS]
        lines.append(f"{split:<6} {s['pairs_in']:>9} {cells[0]:>7} {cells[1]:>9} {cells[2]:>7} {s['pairs_out']:>10}")
    lines.append("(n) = would be dropped, but valid/test keep every line")
    return "\n".join(lines)


def keep_spm(model: Path, out: Path) -> Path:
    """Copy an existing SentencePiece model (and its .vocab) into OUT, checked to have this project's special ids."""
    import sentencepiece as spm

    model = Path(model)
    if not model.is_file():
        raise DataError(f"SentencePiece model not found: {model}\n"
                        f"  --spm-model takes a checkpoint's spm.model, e.g. checkpoints/news-small/spm.model.")
    try:
        sp = spm.SentencePieceProcessor(model_file=str(model))
    except (RuntimeError, OSError) as e:
        raise DataError(f"{model} is not a SentencePiece model: {e}") from None
    ids = (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id())
    if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
        raise DataError(f"{model} numbers <pad>, <unk>, <s>, </s> as {ids}, not (0, 1, 2, 3) as this project's "
                        f"models do.")
    for suffix in (".model", ".vocab"):
        if model.with_suffix(suffix).is_file():
            atomic_write(out / f"spm{suffix}", model.with_suffix(suffix).read_bytes())
    return out / "spm.model"


def prepare(corpus: Path, out: Path, vocab_size: int = 8000, max_len: int = 250, ratio: float = 2.5,
            spm_sample: int = 1_000_000, progress: bool = True, extras=(), selection: Selection | None = None,
            spm_model: Path | None = None) -> dict:
    """Run the whole preparation (check, clean, train or keep SentencePiece, report); return the report.

    extras: folders of more training pairs, chosen by `selection`; spm_model: keep this SentencePiece model.
    """
    import sentencepiece as spm

    corpus, out, selection = Path(corpus), Path(out), selection or Selection()
    counts = check_corpus(corpus)  # fail before writing anything
    extra_counts = [check_extra(folder) for folder in extras]
    out.mkdir(parents=True, exist_ok=True)
    kept_model = keep_spm(spm_model, out) if spm_model else None   # its errors come before the long work
    extra, taken = [], []
    for folder, n in zip(extras, extra_counts):
        rows, kinds = extra_rows(folder, n, selection, progress)
        extra += rows
        taken.append({"corpus": portable(folder), "pairs_in": n, "taken": len(rows), "taken_by_kind": dict(kinds)})
    splits = {s: clean_split(corpus, out, s, counts[s], max_len, ratio, progress,
                             extra if s == "train" else (), selection.tag_back) for s in SPLITS}
    del extra
    if splits["train"]["pairs_out"] == 0:
        raise DataError(f"No training pair survived cleaning in {corpus}; check the files and --max-len/--ratio.")
    tag = (selection.tag_back,) if selection.tag_back else ()
    model = (kept_model or
             train_spm([out / "train.en", out / "train.de"], out, vocab_size, spm_sample, symbols=tag))
    sp = spm.SentencePieceProcessor(model_file=str(model))
    report = {
        "corpus": portable(corpus),   # relative to the project: no machine paths in cards
        "settings": {"vocab_size": vocab_size, "max_len": max_len, "max_len_unit": "words",
                     "ratio": ratio, "ratio_unit": "characters", "ratio_min_chars": RATIO_MIN_CHARS,
                     "spm_sample": spm_sample, "model_type": "bpe", "character_coverage": 0.9999,
                     "byte_fallback": True, "special_ids": {"<pad>": PAD_ID, "<unk>": UNK_ID,
                                                            "<s>": BOS_ID, "</s>": EOS_ID}},
        "splits": splits,
        "spm_vocab_size": sp.get_piece_size(),
    }
    if extras:
        report["extra"] = {"selection": selection.describe(), "corpora": taken}
    if spm_model:
        report["spm_from"] = portable(spm_model)
    write_json(out / "prep_report.json", report)
    return report


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder with {train,valid,test}.{en,de}")
    p.add_argument("--out", type=Path, required=True, help="output folder, e.g. data/wmt-en-de")
    p.add_argument("--vocab-size", type=int, default=8000, help="shared SentencePiece vocabulary size")
    p.add_argument("--max-len", type=int, default=250, help="drop train pairs with a side over this many words")
    p.add_argument("--ratio", type=float, default=2.5, help="drop train pairs whose length ratio (chars) exceeds this")
    p.add_argument("--spm-sample", type=int, default=1_000_000, help="sentences sampled for SentencePiece (0 = all)")
    p.add_argument("--extra", type=Path, nargs="+", default=[], metavar="DIR",
                   help="more training pairs: folders with train.{en,de} and train.origin")
    p.add_argument("--origins", nargs="+", default=[], metavar="PREFIX",
                   help="take only these origins of the --extra corpora, e.g. human forward back/wmt23 (default: all)")
    p.add_argument("--cap", type=int, default=0, metavar="K",
                   help="take at most K translations of one source sentence from the --extra corpora (0: no cap)")
    p.add_argument("--tag-back", default="", metavar="TAG",
                   help="put TAG (e.g. '<bt>') before the English side of back-translated pairs (origin back/...)")
    p.add_argument("--spm-model", type=Path, help="keep this SentencePiece model (a warm start needs its own) "
                                                  "instead of training one")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = p.parse_args(argv)
    if (args.origins or args.cap or args.tag_back) and not args.extra:
        p.error("--origins, --cap and --tag-back choose among the --extra corpora: give --extra DIR")
    if args.cap < 0:
        p.error("--cap must be 0 (no cap) or more")
    try:
        report = prepare(args.corpus, args.out, args.vocab_size, args.max_len, args.ratio,
                         args.spm_sample, progress=not args.no_progress, extras=args.extra,
                         selection=Selection(tuple(args.origins), args.cap, args.tag_back), spm_model=args.spm_model)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_report(report))
    dropped = report["splits"]["train"].get("dropped_by_origin")
    if dropped:
        print("train drops by origin:", ", ".join(f"{k} {v}" for k, v in dropped.items()))
    for c in report.get("extra", {}).get("corpora", []):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c["taken_by_kind"].items()))
        print(f"extra {c['corpus']}: took {c['taken']} of {c['pairs_in']} pairs ({kinds})")
    print(f"SentencePiece vocab: {report['spm_vocab_size']} pieces -> {args.out / 'spm.model'}")
    print(f"report -> {args.out / 'prep_report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
