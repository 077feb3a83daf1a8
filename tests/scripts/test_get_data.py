"""scripts/get_data.py, the whole command, against a local HTTP server (a mirror, --base-url) serving small stand-in
files in place of the real sources: files land checked, a corrupt one is refused with nothing half-written, a cut
one resumes on a rerun, a missing one and no network say what to do, the research licence must be accepted."""
import io
from pathlib import Path

import pytest

from core import datasets as ds
from core.studies import conllu
from core.studies.alignment_gold import read_gold
from scripts import get_data
from tests.file_server import FileServer, serve_stand_ins

CONLLU = "# text = Dogs bark.\n1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_\n\n"
FILES = {  # stand-ins for the real files, under their real hosts and paths (as the mirror keeps them)
    "ud-english-ewt": {"dev": CONLLU, "test": CONLLU, "licence": "CC BY-SA 4.0\n"},
    "rwth-alignment": {"src": "Dogs bark .\n", "tgt": "Hunde bellen .\n", "links": "2-2 1-1 3-3 \n"},
    "multi30k": {f"{s}.{lang}": f"{s} {lang}\n" for s in ("train", "valid", "test") for lang in ("en", "de")},
}


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A local server holding the stand-ins, and a table (ds.PARTS) whose checksums are theirs."""
    with FileServer(tmp_path / "mirror") as srv:
        monkeypatch.setattr(ds, "PARTS", serve_stand_ins(srv, FILES, tmp_path / "built"))
        monkeypatch.setattr(ds, "BUNDLES", {"eval": ("ud-english-ewt", "rwth-alignment"), "multi30k": ("multi30k",)})
        monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "data"))
        yield srv


def run(srv, *args) -> int:
    return get_data.main([*args, "--base-url", srv.url, "--no-progress"])


def leftovers(root: Path) -> list[str]:
    """Half-written things in a data folder: .part files, temporary conversion folders."""
    return [p.name for p in root.rglob("*") if p.name.endswith(".part") or p.name.startswith(".incoming")]


def test_eval_lands_checked_and_the_pages_read_it(mirror, tmp_path, capsys):
    assert run(mirror, "eval", "--accept-licence") == 0
    root = tmp_path / "data"
    assert conllu.read_conllu()[0].words == ["Dogs", "bark"]                  # the default file, read in place
    pair = read_gold()[0]                                                     # links turned English index first
    assert pair.src_words == ["Dogs", "bark", "."] and pair.sure == {(0, 0), (1, 1), (2, 2)}
    assert (root / "eval/rwth-deen-alignment/gold.talp").read_text() == "1-1 2-2 3-3\n"
    assert leftovers(root) == [] and not (root / "downloads").exists()                  # nothing left behind
    assert "3 files checked and in place" in capsys.readouterr().out
    requests = len(mirror.log)
    assert run(mirror, "eval", "--accept-licence") == 0 and len(mirror.log) == requests     # in place: no request
    assert "already in place" in capsys.readouterr().out


def test_multi30k_is_unpacked(mirror, tmp_path):
    assert run(mirror, "multi30k") == 0
    assert (tmp_path / "data/data/multi30k/valid.de").read_text() == "valid de\n"


def test_a_corrupt_file_is_refused_and_nothing_half_written_is_left(mirror, tmp_path, capsys):
    served = mirror.root / "raw.githubusercontent.com/multi30k/dataset"
    bad = next(served.rglob("val.de.gz"))
    data = bytearray(bad.read_bytes())
    data[12] ^= 0xFF                                       # the same size, other bytes
    bad.write_bytes(bytes(data))
    assert run(mirror, "multi30k") == 1
    assert "checksum mismatch" in capsys.readouterr().err
    root = tmp_path / "data"
    assert leftovers(root) == [] and not (root / "data" / "multi30k").exists()


def test_a_conversion_that_differs_from_the_table_is_not_put_in_place(mirror, tmp_path, monkeypatch, capsys):
    part = ds.PARTS["rwth-alignment"]
    wrong = part.outputs[:2] + (ds.Output(part.outputs[2].path, "0" * 64),)
    monkeypatch.setitem(ds.PARTS, "rwth-alignment", ds.Part(part.name, part.title, part.licence, part.remotes,
                                                             wrong, part.build))
    assert run(mirror, "eval", "--accept-licence") == 1
    assert "gold.talp: after conversion" in capsys.readouterr().err
    assert not (tmp_path / "data/eval/rwth-deen-alignment").exists() and leftovers(tmp_path / "data") == []


def test_a_file_cut_short_resumes_on_a_rerun(mirror, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("core.download.time.sleep", lambda seconds: None)      # the retries, without their waits
    mirror.short.add("en_ewt-ud-dev.conllu")
    assert run(mirror, "eval", "--accept-licence") == 1
    assert "resumes where it stopped" in capsys.readouterr().err
    part = tmp_path / "data/downloads/ud-english-ewt/en_ewt-ud-dev.conllu.part"
    assert 0 < part.stat().st_size < len(CONLLU) and not (tmp_path / "data/eval").exists()
    have = part.stat().st_size
    mirror.short.clear()
    assert run(mirror, "eval", "--accept-licence") == 0
    assert [rng for path, rng in mirror.log if path.endswith("dev.conllu")][-1] == f"bytes={have}-"
    assert conllu.read_conllu()[0].words[0] == "Dogs" and leftovers(tmp_path / "data") == []


def test_a_missing_file_says_404_and_offline_says_what_to_do(mirror, tmp_path, capsys):
    next(mirror.root.rglob("test.uc.de")).unlink()
    assert run(mirror, "eval", "--accept-licence") == 1
    assert "HTTP 404" in capsys.readouterr().err
    assert not (tmp_path / "data/eval/rwth-deen-alignment").exists()
    with FileServer(tmp_path / "gone") as gone:
        url = gone.url
    assert get_data.main(["multi30k", "--base-url", url, "--no-progress"]) == 1
    assert "offline" in capsys.readouterr().err


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_licence_is_asked_for_at_a_terminal(mirror, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(get_data.sys, "stdin", Terminal())
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert run(mirror, "eval") == 1 and not (tmp_path / "data/eval/rwth-deen-alignment").exists()
    monkeypatch.setattr("builtins.input", lambda prompt: "yes")
    assert run(mirror, "eval") == 0 and (tmp_path / "data/eval/rwth-deen-alignment/gold.talp").exists()
    assert "no commercial use" in capsys.readouterr().out


def test_the_research_licence_must_be_accepted(mirror, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(get_data.sys, "stdin", io.StringIO())                 # a script: no one to ask
    assert run(mirror, "eval") == 1
    out, err = capsys.readouterr()
    assert "research only" in out and "--accept-licence" in err
    assert (tmp_path / "data/eval/ud-english-ewt/en_ewt-ud-dev.conllu").exists()      # the rest was fetched
    assert not (tmp_path / "data/eval/rwth-deen-alignment").exists()
    assert not any("mt-upc" in path for path, _ in mirror.log)                        # not even asked for


def test_where_and_list(mirror, tmp_path, capsys):
    assert get_data.main(["--where"]) == 0 and capsys.readouterr().out.strip() == str(tmp_path / "data")
    assert get_data.main(["--list"]) == 0 and "must be accepted" in capsys.readouterr().out


def test_a_full_disk_while_converting_puts_nothing_in_place(mirror, tmp_path, monkeypatch, capsys):
    def full(got, tmp):
        raise OSError(28, "No space left on device")             # errno.ENOSPC
    part = ds.PARTS["multi30k"]
    monkeypatch.setitem(ds.PARTS, "multi30k", ds.Part(part.name, part.title, part.licence, part.remotes,
                                                       part.outputs, full))
    assert run(mirror, "multi30k") == 1
    assert "disk is full while converting" in capsys.readouterr().err
    assert not (tmp_path / "data/data").exists() and leftovers(tmp_path / "data") == []
