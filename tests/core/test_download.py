"""core/download.py against a local HTTP server (resume, restarts, checksums, 404s, offline, a full disk)."""
import errno
import hashlib

import pytest

from core import download as dl
from tests.file_server import FileServer

DATA = bytes(range(256)) * 400  # 100 KiB
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def server(tmp_path):
    with FileServer(tmp_path / "srv") as srv:
        (srv.root / "corpus.tgz").write_bytes(DATA)
        yield srv


def test_download_ok_and_a_rerun_asks_nothing(server, tmp_path):
    final = tmp_path / "dest" / "corpus.tgz"
    seen = []
    assert dl.download(f"{server.url}/corpus.tgz", final, SHA, len(DATA), progress=lambda d, t: seen.append((d, t)))
    assert final.read_bytes() == DATA and not list(final.parent.glob("*.part"))
    assert seen[-1] == (len(DATA), len(DATA))
    dl.download(f"{server.url}/corpus.tgz", final, SHA, len(DATA))
    assert len(server.log) == 1                                        # finished: no new request


@pytest.mark.parametrize("have", [len(DATA) // 2, len(DATA)])
def test_a_part_file_is_resumed(server, tmp_path, have):
    (tmp_path / "corpus.tgz.part").write_bytes(DATA[:have])
    assert dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", SHA).read_bytes() == DATA
    assert server.log == [("/corpus.tgz", f"bytes={have}-")]            # only the missing bytes were asked for


def test_a_server_that_ignores_range_sends_the_whole_file_again(server, tmp_path):
    server.ranges = False
    (tmp_path / "corpus.tgz.part").write_bytes(DATA[:1000])
    assert dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", SHA).read_bytes() == DATA


def test_a_cut_connection_is_retried_and_resumed(server, tmp_path):
    server.short.add("corpus.tgz")
    with pytest.raises(dl.DownloadError, match="resumes"):
        dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", SHA, retries=1)
    assert 0 < (tmp_path / "corpus.tgz.part").stat().st_size < len(DATA)     # kept for the rerun
    server.short.clear()
    assert dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", SHA).read_bytes() == DATA
    assert server.log[-1][1] is not None                                       # the rerun asked for the rest


def test_a_checksum_that_differs_deletes_the_file(server, tmp_path):
    with pytest.raises(dl.DownloadError, match="checksum mismatch") as e:
        dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", "0" * 64)
    assert "expected sha256 " + "0" * 64 in str(e.value) and SHA in str(e.value)
    assert list(tmp_path.iterdir()) == [tmp_path / "srv"]


def test_md5_is_checked_where_no_sha256_is_known(server, tmp_path):
    good = hashlib.md5(DATA).hexdigest()
    assert dl.download(f"{server.url}/corpus.tgz", tmp_path / "a" / "c.tgz", md5=good).exists()
    with pytest.raises(dl.DownloadError, match="expected md5"):
        dl.download(f"{server.url}/corpus.tgz", tmp_path / "b" / "c.tgz", md5="f" * 32)
    assert not (tmp_path / "b" / "c.tgz").exists()


def test_a_wrong_size_deletes_the_file(server, tmp_path):
    with pytest.raises(dl.DownloadError, match="expected"):
        dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", size=len(DATA) + 1)
    assert not list(tmp_path.glob("corpus*"))


def test_a_missing_file_says_http_404_at_once(server, tmp_path):
    with pytest.raises(dl.DownloadError, match="HTTP 404.*not at that address"):
        dl.download(f"{server.url}/nothing.tgz", tmp_path / "x.tgz", wait=30)      # no retry: no 30 s wait
    assert len(server.log) == 1


def test_offline_says_what_to_do(tmp_path):
    with FileServer(tmp_path / "srv") as srv:
        url = srv.url
    with pytest.raises(dl.DownloadError, match="offline.*rerun.*--base-url"):
        dl.download(f"{url}/corpus.tgz", tmp_path / "x.tgz", wait=30)


def test_a_full_disk_is_worded_and_keeps_the_part_file(server, tmp_path, monkeypatch):
    def full(url, part, progress, timeout):
        part.write_bytes(DATA[:10])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(dl, "_fetch", full)
    with pytest.raises(dl.DownloadError, match="disk is full.*ATTN_EXPLORER_SHARED"):
        dl.download(f"{server.url}/corpus.tgz", tmp_path / "corpus.tgz", wait=30)
    assert (tmp_path / "corpus.tgz.part").exists()


def test_too_little_free_space_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(dl.DownloadError, match="Not enough free disk space"):
        dl.check_free_space(tmp_path, 10**18)
    dl.check_free_space(tmp_path, 1)


def test_a_mirror_keeps_each_file_under_its_host_and_path():
    assert dl.mirrored("https://statmt.org/wmt13/test.tgz", "http://m/x/") == "http://m/x/statmt.org/wmt13/test.tgz"
    assert dl.mirrored("https://statmt.org/wmt13/test.tgz", None) == "https://statmt.org/wmt13/test.tgz"
