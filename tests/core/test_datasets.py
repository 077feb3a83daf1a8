"""core/datasets.py: the table of outside files (complete, documented, sacrebleu's newstest entries) and the
conversions that turn downloads into the layout the app reads, on small stand-in files."""
import gzip
import hashlib
import io
import tarfile

import pytest

from core import datasets as ds
from core.download import DownloadError
from core.paths import REPO
from core.studies.alignment_gold import read_gold


def tar_bytes(files: dict) -> bytes:
    """A .tgz holding {name: text}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return buf.getvalue()


def test_every_remote_has_a_checksum_or_a_line_checked_output_and_every_bundle_names_parts():
    for part in ds.PARTS.values():
        for r in part.remotes:
            assert r.url.startswith("https://") and (r.sha256 or r.md5), r
        for out in part.outputs:
            assert out.path.split("/")[0] in ("eval", "data")
    assert {p for parts in ds.BUNDLES.values() for p in parts} == set(ds.PARTS)
    assert set(ds.BUNDLES["all"]) == set(ds.PARTS)


def test_docs_list_every_source_with_its_checksum_and_licence():
    doc = (REPO / "docs" / "data.md").read_text(encoding="utf-8")
    for part in ds.PARTS.values():
        assert part.licence.name in doc, part.name
        for r in part.remotes:
            assert r.url in doc and (r.sha256 or r.md5) in doc, r.url


def test_the_newstest_entries_are_sacrebleus_own():
    from sacrebleu.dataset import DATASETS
    remotes = {r.name: r for r in ds.PARTS["newstest"].remotes}
    for name in ("wmt13", "wmt14"):
        assert [remotes[name].url] == DATASETS[name].data and [remotes[name].md5] == DATASETS[name].md5
        assert list(ds.NEWSTEST[name]) == DATASETS[name].langpairs["en-de"]


def test_sgm_segments_equal_what_sacrebleu_writes(tmp_path):
    from sacrebleu.dataset import DATASETS
    sgm = ('<srcset setid="x" srclang="any">\n<doc docid="d" genre="news">\n<p>\n'
           '<seg id="1">  A  &amp; B </seg>\n<seg id="2">Zwei\tW\u00f6rter</seg>\n</p>\n</doc>\n</srcset>\n')
    (tmp_path / "in.sgm").write_text(sgm, encoding="utf-8")
    DATASETS["wmt14"]._convert_format(str(tmp_path / "in.sgm"), str(tmp_path / "out.txt"))
    assert ds.sgm_segments(sgm.encode()) == (tmp_path / "out.txt").read_text(encoding="utf-8").splitlines()
    assert ds.sgm_segments(sgm.encode()) == ["A &amp; B", "Zwei Wörter"]


def test_rwth_links_become_english_index_first_and_sorted(tmp_path):
    assert ds.english_first("9-8 8-8 3p2 10-7 ") == "2p3 7-10 8-8 8-9"
    got = {"src": tmp_path / "s", "tgt": tmp_path / "t", "links": tmp_path / "l"}
    got["src"].write_text("We do not .\nYes .\n", encoding="utf-8")
    got["tgt"].write_text("Wir tun nicht .\nJa .\n", encoding="utf-8")
    got["links"].write_text("1-1 2-3 3p3 4-4 \n2-2 1-1 \n", encoding="utf-8")     # German index first
    ds.rwth_build(got, tmp_path / "out")
    pairs = read_gold(tmp_path / "out" / "eval" / "rwth-deen-alignment")
    assert pairs[0].sure == {(0, 0), (1, 2), (3, 3)}      # (German, English) 0-based: "tun" with "not"
    assert pairs[0].possible == pairs[0].sure | {(2, 2)}
    assert (tmp_path / "out/eval/rwth-deen-alignment/gold.talp").read_text() == "1-1 3-2 3p3 4-4\n1-1 2-2\n"


def test_the_archives_become_the_corpus_layout(tmp_path):
    got = {"wmt13": tmp_path / "13.tgz", "wmt14": tmp_path / "14.tgz"}
    seg = '<doc>\n<seg id="1">{}</seg>\n</doc>\n'
    got["wmt13"].write_bytes(tar_bytes({"test/newstest2013-src.en.sgm": seg.format("Hello"),
                                        "test/newstest2013-src.de.sgm": seg.format("Hallo"),
                                        "test/newstest2013-src.fr.sgm": seg.format("Salut")}))
    got["wmt14"].write_bytes(tar_bytes({"test/newstest2014-deen-src.en.sgm": seg.format("A"),
                                        "test/newstest2014-deen-ref.de.sgm": seg.format("B")}))
    ds.newstest_build(got, tmp_path / "out")
    corpus = tmp_path / "out" / "data" / "wmt14-en-de"
    assert (corpus / "valid.de").read_text() == "Hallo\n" and (corpus / "test.en").read_text() == "A\n"
    train = {name: tmp_path / f"{name}.tgz" for name in ds.TRAIN_MEMBERS}
    for name, (en, de) in ds.TRAIN_MEMBERS.items():
        train[name].write_bytes(tar_bytes({en: f"{name} one\r two\n", de: f"{name} eins\n", "README": "x"}))
    ds.train_build(train, tmp_path / "out")
    assert (corpus / "train.en").read_text().splitlines() == [f"{n} one  two" for n in ds.TRAIN_MEMBERS]
    assert (corpus / "train.de").read_text().splitlines() == [f"{n} eins" for n in ds.TRAIN_MEMBERS]


def test_an_archive_without_the_expected_files_is_named(tmp_path):
    (tmp_path / "a.tgz").write_bytes(tar_bytes({"other": "x"}))
    with pytest.raises(DownloadError, match="lacks test/newstest2013-src.de.sgm, test/newstest2013-src.en.sgm"):
        list(ds.tar_members(tmp_path / "a.tgz", ds.NEWSTEST["wmt13"]))


def test_gunzip_writes_the_text(tmp_path):
    (tmp_path / "x.gz").write_bytes(gzip.compress(b"a\nb\n"))
    ds.gunzip_as({"x": "data/m/train.en"})({"x": tmp_path / "x.gz"}, tmp_path / "out")
    assert (tmp_path / "out/data/m/train.en").read_bytes() == b"a\nb\n"


def test_a_converted_file_is_checked_against_its_checksum_and_lines(tmp_path):
    (tmp_path / "f").write_text("a\nb\n")
    ds.check_output(ds.Output("f", hashlib.sha256(b"a\nb\n").hexdigest(), 2), tmp_path / "f")
    with pytest.raises(DownloadError, match="sha256"):
        ds.check_output(ds.Output("f", "0" * 64), tmp_path / "f")
    with pytest.raises(DownloadError, match="2 lines, not 3"):
        ds.check_output(ds.Output("f", lines=3), tmp_path / "f")


def test_pages_name_the_command_and_its_size():
    assert ds.how_to_get("eval") == "`python scripts/get_data.py eval` (3.8 MB)"
    assert "1.66 GB" in ds.how_to_get("wmt") and "not recorded" in ds.how_to_get("newstest")


def test_training_corpora_whose_sides_differ_in_length_are_refused(tmp_path):
    train = {}
    for name, (en, de) in ds.TRAIN_MEMBERS.items():
        train[name] = tmp_path / f"{name}.tgz"
        train[name].write_bytes(tar_bytes({en: "one\n", de: "eins\nzwei\n" if name == "commoncrawl" else "eins\n"}))
    with pytest.raises(DownloadError, match="3 English and 4 German lines"):
        ds.train_build(train, tmp_path / "out")
