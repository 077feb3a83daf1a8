"""scripts/download_wmt14.py against a local HTTP server (resume, restarts, checksums, 404s; no internet)."""
import hashlib
import io
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scripts import download_wmt14 as dl
from scripts import prepare_data as pd

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
