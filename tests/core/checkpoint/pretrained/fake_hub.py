"""A local HTTP server that answers as the Hugging Face Hub does, for huggingface_hub pointed at it (HF_ENDPOINT):
model info with its file listing (GET /api/models/REPO[/revision/REV]; REV: main or the repo's one commit), the
file tree (GET /api/models/REPO/tree/REV), and each file (HEAD and GET /REPO/resolve/REV/FILE). It serves folders
of tiny models built in the tests, records every request, and can cut a file short or corrupt it. Nothing leaves
this machine."""
from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class FakeHub:
    """repos: {"owner/name": folder}; requests: every (method, path) asked; short / corrupt: file names served cut
    short (the announced size kept) or with their bytes scrambled; slow: {file name: seconds to wait before it}."""

    def __init__(self):
        self.repos: dict[str, Path] = {}
        self.requests: list[tuple[str, str]] = []
        self.short: set[str] = set()
        self.corrupt: set[str] = set()
        self.slow: dict[str, float] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering: later requests are refused, as with no network."""
        self.server.shutdown()
        self.server.server_close()

    def files(self, repo: str) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.repos[repo].iterdir()) if p.is_file()}

    def commit(self, repo: str) -> str:
        """A commit hash of the repo's files, as the Hub gives (40 hex digits)."""
        h = hashlib.sha1(repo.encode())
        for name, data in self.files(repo).items():
            h.update(name.encode() + hashlib.sha1(data).digest())
        return h.hexdigest()

    def fetched(self) -> set[str]:
        """The names of the files that were downloaded (GET of /resolve/)."""
        return {path.rsplit("/", 1)[-1] for method, path in self.requests if method == "GET" and "/resolve/" in path}


@contextlib.contextmanager
def serving(repos: dict, monkeypatch, tmp_path):
    """A running FakeHub serving repos ({"owner/name": folder}), HF_ENDPOINT pointed at it, network allowed, and this
    test's own Hugging Face cache and explorer cache."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "explorer-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # huggingface_hub reads HF_HUB_OFFLINE once, when first imported (under the suite's offline setting when
    # transformers came first): its constant must say online too, or every call raises OfflineModeIsEnabled
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with FakeHub() as hub:
        hub.repos.update(repos)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):       # quiet: pytest shows failures, not every request
            pass

        def _json(self, obj, status: int = 200, error: str | None = None):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if error:
                self.send_header("X-Error-Code", error)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _repo(self, parts: list[str]) -> tuple[str | None, list[str]]:
            repo = "/".join(parts[:2])
            return (repo if repo in hub.repos else None), parts[2:]

        def _known(self, repo: str, revision: list[str]) -> bool:
            """Whether a revision is one the repo has: main, or its one commit."""
            return revision[:1] in (["main"], [hub.commit(repo)])

        def _answer(self):
            path = unquote(urlparse(self.path).path)
            hub.requests.append((self.command, path))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "models"]:
                repo, rest = self._repo(parts[2:])
                if repo is None:
                    return self._json({"error": "Repository not found"}, 404, "RepoNotFound")
                files = hub.files(repo)
                if rest[:1] in (["tree"], ["revision"]) and not self._known(repo, rest[1:2]):
                    return self._json({"error": "Invalid rev id"}, 404, "RevisionNotFound")
                if rest[:1] == ["tree"]:
                    return self._json([{"type": "file", "path": n, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                                       for n, d in files.items()])
                siblings = [{"rfilename": n, "size": len(d), "blobId": hashlib.sha1(d).hexdigest()}
                            for n, d in files.items()]
                return self._json({"id": repo, "modelId": repo, "sha": hub.commit(repo), "siblings": siblings,
                                   "private": False, "tags": []})
            repo, rest = self._repo(parts)
            if repo is None or rest[:1] != ["resolve"] or len(rest) < 3:
                return self._json({"error": "Repository not found"}, 404, "RepoNotFound")
            if not self._known(repo, rest[1:2]):
                return self._json({"error": "Invalid rev id"}, 404, "RevisionNotFound")
            name = "/".join(rest[2:])
            files = hub.files(repo)
            if name not in files:
                return self._json({"error": "Entry not found"}, 404, "EntryNotFound")
            data = files[name]
            served = data[: len(data) // 2] if name in hub.short else data
            if name in hub.corrupt:
                served = bytes(b ^ 0x5A for b in data)
            self.send_response(200)
            self.send_header("X-Repo-Commit", hub.commit(repo))
            self.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Content-Length", str(len(served)))
            self.end_headers()
            if self.command == "GET":
                time.sleep(hub.slow.get(name, 0.0))
                self.wfile.write(served)

        def do_GET(self):
            self._answer()

        def do_HEAD(self):
            self._answer()

    return Handler
