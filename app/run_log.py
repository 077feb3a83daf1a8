"""How long each script run took, for scripts/bench/bench_class.py: one JSON line a run, when asked for."""
import json
import os
import time


def log_run(started: float, page: str) -> None:
    """If the env var ATTN_EXPLORER_RUN_LOG names a file, append this script run's duration to it as a JSON line
    (scripts/bench/bench_class.py reads it); otherwise do nothing."""
    path = os.environ.get("ATTN_EXPLORER_RUN_LOG")
    if path:
        line = json.dumps({"t": time.time(), "seconds": time.perf_counter() - started, "page": page}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())      # one append of one short line: lines of concurrent runs never mix
        finally:
            os.close(fd)
