"""Every outside file the project reads, in one table: where it comes from, its licence, size and checksum, and how
it becomes the layout the app reads (core.paths: eval/ for gold files, data/ for corpora). `install` fetches a part
(core.download), converts it in a temporary folder beside its place, checks what it made and only then moves it in.

Checksums: those of the UD, RWTH and Multi30k files were computed from the files at the pinned commits, and match
the copies the project was developed with; the WMT14 training archives' are TensorFlow Datasets' published values;
the newstest archives have sacrebleu's md5 only; a converted file with no known sha256 is checked by line count.
"""
from __future__ import annotations

import contextlib
import errno
import gzip
import re
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.download import DownloadError, Progress, check_free_space, download, file_digest, megabytes, mirrored
from core.paths import shared_dir

COMMAND = "python scripts/get_data.py"
WMT14 = "wmt14-en-de"            # the folder under data/ of newstest (valid, test) and the WMT14 training corpora


@dataclass(frozen=True)
class Licence:
    """The terms a file comes under; `must_accept`: shown and accepted before it is downloaded."""
    name: str
    url: str
    must_accept: bool = False
    terms: str = ""


CC_BY_SA = Licence("CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/")
RWTH = Licence("RWTH Aachen research licence", "https://www-i6.informatik.rwth-aachen.de/goldAlignment/", True,
               "The RWTH German-English gold alignments (Vilar et al. 2006) are RWTH Aachen's: their download page "
               "has you accept RWTH's licence first (read it there). Use them for research only: no commercial use, "
               "and do not redistribute them (keep them out of any repository or model you share). The project "
               "uses them to evaluate heads, never to train.")
MULTI30K = Licence("non-commercial research and education (Flickr30k terms)", "https://github.com/multi30k/dataset")
WMT = Licence("WMT: released for research use", "https://www.statmt.org/wmt14/translation-task.html")
EUROPARL = Licence("Europarl: no copyright restrictions; Common Crawl and News Commentary: research use",
                   "https://www.statmt.org/wmt14/translation-task.html")


@dataclass(frozen=True)
class Remote:
    """One file as its source publishes it; `name`: how a part's build refers to it."""
    name: str
    url: str
    size: int | None
    sha256: str | None                  # None: not known (the file is then checked by md5 or not at all)
    md5: str | None = None              # sacrebleu's published md5, for files with no known sha256


@dataclass(frozen=True)
class Output:
    """A file the app reads, relative to the data folder, with what it must be after conversion."""
    path: str
    sha256: str | None = None
    lines: int | None = None


@dataclass(frozen=True)
class Part:
    """What one download makes: its sources, how they become the outputs, and the outputs' checks."""
    name: str
    title: str
    licence: Licence
    remotes: tuple
    outputs: tuple
    build: Callable = field(repr=False)   # (downloaded {name: path}, temporary folder) -> writes the outputs there

    @property
    def size(self) -> int | None:
        sizes = [r.size for r in self.remotes]
        return None if None in sizes else sum(sizes)


# --------------------------------------------------------------------------- conversions

def copy_as(names: dict) -> Callable:
    """A build that copies downloads to their names in the layout: {remote name: output path}."""
    def build(got: dict, tmp: Path) -> None:
        for name, out in names.items():
            (tmp / out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(got[name], tmp / out)
    return build


def gunzip_as(names: dict) -> Callable:
    """A build that unpacks .gz downloads to their names in the layout."""
    def build(got: dict, tmp: Path) -> None:
        for name, out in names.items():
            (tmp / out).parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(got[name], "rb") as src, open(tmp / out, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return build


def english_first(line: str) -> str:
    """A TALP line with the German index first ("9-8 3p2 "), unsorted, as the RWTH file has it -> English index
    first, sorted by (English, German), single spaces: what core.studies.alignment_gold reads."""
    links = []
    for item in line.split():
        sep = "-" if "-" in item else "p"
        de, _, en = item.partition(sep)
        links.append((int(en), int(de), sep))
    return " ".join(f"{en}{sep}{de}" for en, de, sep in sorted(links))


def rwth_build(got: dict, tmp: Path) -> None:
    """The RWTH files in the layout: the texts as they are, the links turned English index first (gold.talp)."""
    copy_as({"src": "eval/rwth-deen-alignment/src.en", "tgt": "eval/rwth-deen-alignment/tgt.de"})(got, tmp)
    lines = got["links"].read_text(encoding="utf-8").splitlines()
    (tmp / "eval/rwth-deen-alignment/gold.talp").write_text("".join(english_first(x) + "\n" for x in lines),
                                                           encoding="utf-8")


def tar_members(archive: Path, wanted):
    """(member name, file object) of each wanted member of a (compressed) tar archive, in one pass, streamed (the
    training archives hold files of hundreds of MB); DownloadError after the pass when one was not there."""
    seen = set()
    with tarfile.open(archive, "r|*") as tar:
        for member in tar:
            if member.name in wanted and member.isfile():
                seen.add(member.name)
                yield member.name, tar.extractfile(member)
    if missing := set(wanted) - seen:
        raise DownloadError(f"{archive.name} lacks {', '.join(sorted(missing))}: is it the right archive?")


def sgm_segments(data: bytes) -> list[str]:
    """The <seg> lines of a WMT .sgm file as sacrebleu writes them (its own conversion: the segment's text,
    whitespace collapsed, entities left as they are), so the sets equal `sacrebleu -t wmt14 -l en-de --echo src`."""
    out = []
    for line in data.decode("utf-8").splitlines():
        if line.startswith("<seg "):
            out.append(re.sub(r"\s+", " ", re.sub(r"<seg.*?>(.*)</seg>.*?", "\\1", line).strip()))
    return out


NEWSTEST = {"wmt13": ("test/newstest2013-src.en.sgm", "test/newstest2013-src.de.sgm"),
            "wmt14": ("test/newstest2014-deen-src.en.sgm", "test/newstest2014-deen-ref.de.sgm")}


def newstest_build(got: dict, tmp: Path) -> None:
    """newstest2013 (the paper's dev set) -> valid.{en,de}, newstest2014 filtered -> test.{en,de}."""
    for name, split in (("wmt13", "valid"), ("wmt14", "test")):
        for member, data in tar_members(got[name], NEWSTEST[name]):
            out = tmp / "data" / WMT14 / f"{split}.{'en' if member == NEWSTEST[name][0] else 'de'}"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(s + "\n" for s in sgm_segments(data.read())), encoding="utf-8")


TRAIN_MEMBERS = {"europarl": ("training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
                 "commoncrawl": ("commoncrawl.de-en.en", "commoncrawl.de-en.de"),
                 "news-commentary": ("training/news-commentary-v9.de-en.en", "training/news-commentary-v9.de-en.de")}


def train_build(got: dict, tmp: Path) -> None:
    """The three WMT14 training corpora, one after another, into train.{en,de} (a stray CR inside a Common Crawl
    line must not split it; a bad byte becomes U+FFFD)."""
    folder = tmp / "data" / WMT14
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "train.en", "w", encoding="utf-8", newline="\n") as en, \
            open(folder / "train.de", "w", encoding="utf-8", newline="\n") as de:
        for name, pair in TRAIN_MEMBERS.items():
            for member, data in tar_members(got[name], pair):
                (en if member == pair[0] else de).writelines(
                    line.decode("utf-8", errors="replace").rstrip("\n").replace("\r", " ") + "\n" for line in data)
    if (n_en := line_count(folder / "train.en")) != (n_de := line_count(folder / "train.de")):
        raise DownloadError(f"the training corpora have {n_en} English and {n_de} German lines: not aligned.")


# --------------------------------------------------------------------------- the table

UD = "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/15d613d8447b3478787d4c278730a1e48a945efb"
MT_UPC = ("https://raw.githubusercontent.com/mt-upc/transformer-contributions-nmt/"
          "0af85383f211238f23a5a693730a79634d89bf66/data/de-en")
M30K = "https://raw.githubusercontent.com/multi30k/dataset/2cc0f2d7c615b60e07e2d51bb5edc004444d7e0e/data/task1/raw"
STATMT = "https://www.statmt.org"
UD_REMOTES = (Remote("dev", f"{UD}/en_ewt-ud-dev.conllu", 1_805_545,
                     "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6"),
              Remote("test", f"{UD}/en_ewt-ud-test.conllu", 1_804_515,
                     "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd"),
              Remote("licence", f"{UD}/LICENSE.txt", 20_014,
                     "b3d1b0f4c6ae151f7eb78738f46ebd5ee140f8a7f76501ba26af123140d35ae7"))
UD_FILES = {"dev": "eval/ud-english-ewt/en_ewt-ud-dev.conllu", "test": "eval/ud-english-ewt/en_ewt-ud-test.conllu",
            "licence": "eval/ud-english-ewt/LICENSE.txt"}     # the files are used as published

PARTS = {p.name: p for p in [
    Part("ud-english-ewt", "UD English EWT dev and test (gold dependency parses; the Syntax tab, the Atlas, Figure 5)",
         CC_BY_SA, UD_REMOTES, tuple(Output(out, r.sha256) for r, out in zip(UD_REMOTES, UD_FILES.values())),
         copy_as(UD_FILES)),
    Part("rwth-alignment", "RWTH German-English gold word alignments, 508 Europarl pairs (Alignment, the Atlas)",
         RWTH,
         (Remote("src", f"{MT_UPC}/test.uc.en", 56_951,
                 "6ac8d121388715832e00ef64587d731bcf02d244f4f40357e619990efea816f7"),
          Remote("tgt", f"{MT_UPC}/test.uc.de", 64_978,
                 "a81f635e593401715dee3f566c0ad9047b8962abccf7ea9c87c79979807d056b"),
          Remote("links", f"{MT_UPC}/alignment.talp", 54_422,
                 "2985def453f3fbce21d091d5193ec407000ee62e20642502961320a470dacbb2")),
         (Output("eval/rwth-deen-alignment/src.en", "6ac8d121388715832e00ef64587d731bcf02d244f4f40357e619990efea816f7"),
          Output("eval/rwth-deen-alignment/tgt.de", "a81f635e593401715dee3f566c0ad9047b8962abccf7ea9c87c79979807d056b"),
          Output("eval/rwth-deen-alignment/gold.talp",
                 "691eaf5a8e060cbcd94bcc92ca7a40c28377cdb2eaea8fead3a44e45147fe5b8")),
         rwth_build),
    Part("multi30k", "Multi30k task 1, English-German captions (train 29,000, valid 1,014, test 2016 1,000)",
         MULTI30K,
         (Remote("train.en", f"{M30K}/train.en.gz", 568_929,
                 "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"),
          Remote("train.de", f"{M30K}/train.de.gz", 637_044,
                 "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6"),
          Remote("valid.en", f"{M30K}/val.en.gz", 21_650,
                 "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28"),
          Remote("valid.de", f"{M30K}/val.de.gz", 24_681,
                 "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a"),
          Remote("test.en", f"{M30K}/test_2016_flickr.en.gz", 21_077,
                 "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"),
          Remote("test.de", f"{M30K}/test_2016_flickr.de.gz", 22_890,
                 "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8")),
         (Output("data/multi30k/train.en", "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6"),
          Output("data/multi30k/train.de", "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72"),
          Output("data/multi30k/valid.en", "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227"),
          Output("data/multi30k/valid.de", "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660"),
          Output("data/multi30k/test.en", "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182"),
          Output("data/multi30k/test.de", "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16")),
         gunzip_as({f"{s}.{lang}": f"data/multi30k/{s}.{lang}" for s in ("train", "valid", "test")
                    for lang in ("en", "de")})),
    Part("newstest", "newstest2013 (the paper's dev set) and newstest2014 (its test set), via sacrebleu's table",
         WMT,
         (Remote("wmt13", "https://statmt.org/wmt13/test.tgz", None, None, "48eca5d02f637af44e85186847141f67"),
          Remote("wmt14", "https://statmt.org/wmt14/test-filtered.tgz", None, None,
                 "84c597844c1542e29c2aff23aaee4310")),
         (Output(f"data/{WMT14}/valid.en", lines=3000), Output(f"data/{WMT14}/valid.de", lines=3000),
          Output(f"data/{WMT14}/test.en", lines=2737), Output(f"data/{WMT14}/test.de", lines=2737)),
         newstest_build),
    Part("wmt14-train", "WMT14 English-German training data: Europarl v7, Common Crawl, News Commentary v9 "
         "(about 4.5 million pairs, the paper's)", EUROPARL,
         (Remote("europarl", f"{STATMT}/wmt13/training-parallel-europarl-v7.tgz", 657_632_379,
                 "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7"),
          Remote("commoncrawl", f"{STATMT}/wmt13/training-parallel-commoncrawl.tgz", 918_311_367,
                 "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5"),
          Remote("news-commentary", f"{STATMT}/wmt14/training-parallel-nc-v9.tgz", 80_418_416,
                 "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485")),
         (Output(f"data/{WMT14}/train.en"), Output(f"data/{WMT14}/train.de")),
         train_build),
]}

BUNDLES = {"eval": ("ud-english-ewt", "rwth-alignment"), "multi30k": ("multi30k",), "newstest": ("newstest",),
           "wmt": ("newstest", "wmt14-train"),
           "all": ("ud-english-ewt", "rwth-alignment", "multi30k", "newstest", "wmt14-train")}


def bundle_size(bundle: str) -> str:
    """What a bundle downloads, for a person: '3.8 MB', or the known part and what is not known."""
    parts = [PARTS[p] for p in BUNDLES[bundle]]
    known = sum(p.size or 0 for p in parts)
    unknown = [p for p in parts if p.size is None]
    if not unknown:
        return megabytes(known)
    return (f"{megabytes(known)} and " if known else "") + "two test-set archives whose size is not recorded"


def how_to_get(bundle: str) -> str:
    """The one command that fetches a bundle, with its size, as a page or a message names it."""
    return f"`{COMMAND} {bundle}` ({bundle_size(bundle)})"


# --------------------------------------------------------------------------- installing

def is_installed(part: Part, root: Path | None = None) -> bool:
    """Whether every output of a part is in the data folder."""
    root = Path(root) if root is not None else shared_dir()
    return all((root / o.path).is_file() for o in part.outputs)


def line_count(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def check_output(out: Output, path: Path) -> None:
    """DownloadError when a converted file is not what the table says it must be."""
    if out.sha256 and (got := file_digest(path)) != out.sha256:
        raise DownloadError(f"{out.path}: after conversion its sha256 is {got}, not {out.sha256}: a source "
                            "changed, or the conversion did; nothing was put in place.")
    if out.lines is not None and (got := line_count(path)) != out.lines:
        raise DownloadError(f"{out.path}: after conversion it has {got} lines, not {out.lines}; nothing was put "
                            "in place.")


def install(part: Part, root: Path | None = None, base_url: str | None = None, progress=None,
            keep_downloads: bool = False) -> list[Path]:
    """Fetch a part into the data folder `root` (default core.paths.shared_dir()) and return its outputs.

    Downloads go to ROOT/downloads (resumable); the conversion writes into ROOT/.incoming-NAME; each output is
    checked there and only then moved into place. `progress(remote, done, total)` follows each download.
    A part already in place is left as it is.
    """
    root = Path(root) if root is not None else shared_dir()
    if is_installed(part, root):
        return [root / o.path for o in part.outputs]
    downloads = root / "downloads"
    check_free_space(root, 3 * (part.size or 0))       # the download, its conversion, and room to spare
    got = {}
    for remote in part.remotes:
        tick: Progress | None = (lambda done, total, r=remote: progress(r, done, total)) if progress else None
        name = Path(remote.url).name
        got[remote.name] = download(mirrored(remote.url, base_url), downloads / part.name / name, remote.sha256,
                                    remote.size, remote.md5, progress=tick)
    tmp = root / f".incoming-{part.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        part.build(got, tmp)
        for out in part.outputs:
            check_output(out, tmp / out.path)
        for out in part.outputs:
            (root / out.path).parent.mkdir(parents=True, exist_ok=True)
            (tmp / out.path).replace(root / out.path)
    except (OSError, tarfile.TarError, gzip.BadGzipFile, UnicodeDecodeError, ValueError) as e:
        if getattr(e, "errno", None) == errno.ENOSPC:
            raise DownloadError(f"The disk is full while converting {part.title}: nothing was put in place. Free "
                                "some space, or set ATTN_EXPLORER_SHARED to a folder on a larger disk, and rerun "
                                "(the downloads are kept).") from None
        raise DownloadError(f"{part.title}: the downloaded files could not be converted ({e}). Nothing was put "
                            "in place; delete the data folder's downloads/ and rerun.") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not keep_downloads:
        shutil.rmtree(downloads / part.name, ignore_errors=True)
        with contextlib.suppress(OSError):                # the folder too, once nothing else is in it
            downloads.rmdir()
    return [root / o.path for o in part.outputs]
