"""Tests for scripts/prepare_data.py and scripts/download_wmt14.py (small fixtures, no internet)."""
import hashlib
import io
import json
import random
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sentencepiece as spm

from scripts import download_wmt14 as dl
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


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    with pytest.raises(ValueError):
        with pd.atomic_write(tmp_path / "f.txt") as f:
            f.write("half")
            raise ValueError
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- downloader


class Handler(BaseHTTPRequestHandler):
    """Serves files from server.root; honours "Range: bytes=N-" unless server.ranges is False."""

    def do_GET(self):
        self.server.log.append((self.path, self.headers.get("Range")))
        path = self.server.root / self.path.lstrip("/")
        if not path.is_file():
            return self.send_error(404)
        data = path.read_bytes()
        rng = self.headers.get("Range") if self.server.ranges else None
        start = int(rng.split("=")[1].split("-")[0]) if rng else 0
        if start >= len(data) and rng:
            return self.send_error(416)
        self.send_response(206 if rng else 200)
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(tmp_path):
    """An HTTP server on 127.0.0.1 (free port) serving tmp_path/srv; yields (server, base_url)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.root, srv.log, srv.ranges = tmp_path / "srv", [], True
    srv.root.mkdir()
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def put(srv, name: str, data: bytes) -> dl.Source:
    """Put a file on the server; return a Source for it with the right sha256 and size."""
    (srv.root / name).write_bytes(data)
    return dl.Source(name.split(".")[0], name, hashlib.sha256(data).hexdigest(), len(data))


DATA = bytes(range(256)) * 400  # 100 KiB


def test_download_ok(server, tmp_path):
    srv, url = server
    src = put(srv, "corpus.tgz", DATA)
    path = dl.download(src, tmp_path / "dest", url, progress=False)
    assert path.read_bytes() == DATA and not list((tmp_path / "dest").glob("*.part"))
    assert dl.download(src, tmp_path / "dest", url, progress=False) == path  # finished: no new request
    assert len(srv.log) == 1


@pytest.mark.parametrize("have", [len(DATA) // 2, len(DATA)])
def test_download_resumes_part_file(server, tmp_path, have):
    srv, url = server
    src = put(srv, "corpus.tgz", DATA)
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "corpus.tgz.part").write_bytes(DATA[:have])
    assert dl.download(src, tmp_path / "dest", url, progress=False).read_bytes() == DATA
    assert srv.log == [("/corpus.tgz", f"bytes={have}-")]  # only the missing bytes were asked for


def test_download_restarts_when_server_ignores_range(server, tmp_path):
    srv, url = server
    srv.ranges = False
    src = put(srv, "corpus.tgz", DATA)
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "corpus.tgz.part").write_bytes(DATA[:1000])
    assert dl.download(src, tmp_path / "dest", url, progress=False).read_bytes() == DATA


def test_download_corrupt_file_is_caught_and_deleted(server, tmp_path):
    srv, url = server
    src = put(srv, "corpus.tgz", DATA)._replace(sha256="0" * 64)
    with pytest.raises(dl.DownloadError, match="checksum mismatch"):
        dl.download(src, tmp_path / "dest", url, progress=False)
    assert list((tmp_path / "dest").iterdir()) == []


def test_download_missing_file_says_http_404(server, tmp_path):
    _, url = server
    with pytest.raises(dl.DownloadError, match="HTTP 404"):
        dl.download(dl.Source("x", "x.tgz", None, None), tmp_path, url, progress=False)


def test_main_downloads_extracts_and_assembles(server, tmp_path, capsys):
    srv, url = server
    files = {name: "x\n" for pair in dl.LAYOUT["train"] for name in pair}
    files.update({"training/europarl-v7.de-en.en": "Hello\rworld\n\n",
                  "training/europarl-v7.de-en.de": "Hallo Welt\n\n",
                  "dev/newstest2013.en": "dev\n", "dev/newstest2013.de": "Entw\n",
                  "test-full/newstest2014-deen-src.en.sgm": '<doc>\n<seg id="1">A &amp; B</seg>\n</doc>\n',
                  "test-full/newstest2014-deen-ref.de.sgm": '<doc>\n<seg id="1">A &amp; B ü</seg>\n</doc>\n'})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    src = put(srv, "all.tgz", buf.getvalue())._replace(sha256=None)
    assert dl.main(["--dest", str(tmp_path / "raw"), "--base-url", url], sources=[src]) == 0
    assert hashlib.sha256(buf.getvalue()).hexdigest() in capsys.readouterr().out  # unpinned: printed
    corpus = tmp_path / "raw" / "corpus"
    assert (corpus / "train.en").read_text(encoding="utf-8") == "Hello world\n\nx\nx\n"
    assert (corpus / "test.de").read_text(encoding="utf-8") == "A & B ü\n"
    assert pd.check_corpus(corpus) == {"train": 4, "valid": 1, "test": 1}
