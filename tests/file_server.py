"""A local HTTP file server for the download tests (nothing leaves this machine): serves a folder, honours
"Range: bytes=N-" unless told not to, records each request, and can cut a file short (the announced length kept,
so the client sees the connection close early)."""
from __future__ import annotations

import gzip
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        srv = self.server.files
        srv.log.append((self.path, self.headers.get("Range")))
        path = srv.root / self.path.lstrip("/")
        if not path.is_file():
            return self.send_error(404)
        data = path.read_bytes()
        rng = self.headers.get("Range") if srv.ranges else None
        start = int(rng.split("=")[1].split("-")[0]) if rng else 0
        if rng and start >= len(data):
            return self.send_error(416)
        self.send_response(206 if rng else 200)
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        body = data[start:]
        if path.name in srv.short:                       # announce the whole length, send half, close
            body = body[: len(body) // 2]
            self.close_connection = True
        self.wfile.write(body)

    def log_message(self, *args):                        # keep the test output clean
        pass


class FileServer:
    """root: the folder served; log: (path, Range header) of each request; ranges: whether Range is honoured;
    short: names of files sent cut short."""

    def __init__(self, root: Path):
        self.root, self.log, self.ranges, self.short = Path(root), [], True, set()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.files = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        Path(root).mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> FileServer:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_stand_ins(server: FileServer, stand_ins: dict, tmp: Path) -> dict:
    """Put stand-ins for the table's files on `server` under their real hosts and paths (a mirror for --base-url);
    return core.datasets.PARTS remade with the stand-ins' sizes and checksums, and the checksums of what the
    conversion makes of them. stand_ins: {part name: {remote name: text}} (compressed where the source is .gz)."""
    from core import datasets as ds

    def sha(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    parts = dict(ds.PARTS)
    for name, files in stand_ins.items():
        part, remotes, got = ds.PARTS[name], [], {}
        for r in part.remotes:
            data = files[r.name].encode()
            data = gzip.compress(data, mtime=0) if r.url.endswith(".gz") else data
            where = server.root / urlsplit(r.url).netloc / urlsplit(r.url).path.lstrip("/")
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_bytes(data)
            remotes.append(ds.Remote(r.name, r.url, len(data), sha(data)))
            got[r.name] = where
        part.build(got, tmp / name)                        # what the conversion must make of the stand-ins
        outputs = tuple(ds.Output(o.path, sha((tmp / name / o.path).read_bytes())) for o in part.outputs)
        parts[name] = ds.Part(part.name, part.title, part.licence, tuple(remotes), outputs, part.build)
    return parts
