"""scripts/serve.py: two replicas of the app behind Debian's nginx on localhost, started and stopped as an operator
does. A browser's requests and its WebSocket stay on one replica (the balancer's X-Attn-Replica header names the
one that answered); a killed replica's visitors reconnect to the live one and the launcher starts it again;
SIGTERM stops nginx and every replica (slow: real servers, about 10 s); a port in use is a clear error."""
import asyncio
import base64
import http.client
import os
import re
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from scripts import balancer
from scripts.serve import Replica, ServeError, healthy, parse_args, port_free, serve
from scripts.served import Served

pytestmark = pytest.mark.skipif(balancer.why_not() is not None, reason=f"no load balancer: {balancer.why_not()}")


def test_a_port_in_use_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = parse_args(["--port", str(port), "--address", "127.0.0.1", "--replica-port", str(port + 1)])
        with pytest.raises(ServeError, match=f"port {port} on 127.0.0.1 is in use"):
            serve(args, threading.Event())
    with pytest.raises(SystemExit):
        parse_args(["--replicas", "0"])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    s = Served(2, folder / "serve.log", env={"ATTN_EXPLORER_CLASS_DB": str(folder / "classes.sqlite3")})
    try:
        s.wait_ready()
        yield s
    finally:
        s.stop()


async def open_stream(url: str, key: str | None):
    """A browser's WebSocket to Streamlit through the balancer, with its sticky cookie."""
    return await connect("ws" + url[len("http"):] + "/_stcore/stream", subprotocols=["streamlit"], origin=url,
                         additional_headers={"Cookie": f"{balancer.ROUTE_COOKIE}={key}"} if key else None,
                         open_timeout=30)


def port_of(headers) -> int:
    return int(headers[balancer.REPLICA_HEADER].rsplit(":", 1)[1])


@pytest.mark.slow
def test_a_browsers_requests_and_its_websocket_stay_on_its_replica(served):
    with urllib.request.urlopen(served.url + "/", timeout=30) as r:      # a new browser opens the app
        first = port_of(r.headers)
        key = re.search(rf"{balancer.ROUTE_COOKIE}=([0-9a-f]{{32}});", r.headers["Set-Cookie"]).group(1)
    for _ in range(3):
        for path in ("/", "/_stcore/health", "/_stcore/host-config"):
            assert served.answered_by(key, path) == first

    async def stream():
        ws = await open_stream(served.url, key)
        await ws.close()
        return port_of(ws.response.headers)
    assert asyncio.run(stream()) == first
    assert {served.answered_by(None) for _ in range(24)} == set(served.replica_ports())   # new browsers: spread


def test_a_replica_that_keeps_dying_is_left_down():
    now = time.monotonic()
    r = Replica(1, 8601, {}, starts=[now - 50, now - 30])
    assert r.may_restart()                                  # two starts in the last minute: once more
    r.starts.append(now - 1)
    assert not r.may_restart()                              # three: something is wrong beyond one crash
    assert Replica(1, 8601, {}, starts=[now - 300, now - 200, now - 100]).may_restart()


def upgrade(served, host: str) -> int:
    """The status of a WebSocket upgrade through the balancer from a page of `host` (address:port as the browser
    wrote it, a school's server name say): 101 when Streamlit accepts it as same-origin."""
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("GET", "/_stcore/stream", headers={
        "Host": host, "Origin": f"http://{host}", "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Protocol": "streamlit"})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.slow
def test_a_media_file_is_looked_for_on_every_replica(served):
    """A browser back on a restarted replica may ask it for an image its page drew on another: nginx asks them all."""
    req = urllib.request.Request(served.url + "/media/not-drawn-anywhere.png",
                                 headers={"Cookie": f"{balancer.ROUTE_COOKIE}={served.pin(served.replica_port)}"})
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(req, timeout=30)
    assert missing.value.code == 404
    tried = [int(a.rsplit(":", 1)[1]) for a in missing.value.headers[balancer.REPLICA_HEADER].split(", ")]
    assert tried == served.replica_ports()                 # its own replica first, then the other
    assert served.answered_by(served.pin(served.replica_port), "/_stcore/health") == served.replica_port


@pytest.mark.slow
def test_a_page_served_under_the_schools_name_and_port_opens_its_websocket(served):
    assert upgrade(served, f"explorer.school.example:{served.port}") == 101
    assert upgrade(served, f"explorer.school.example:{served.port + 1}") == 101    # ports mapped by a gateway


@pytest.mark.slow
def test_a_killed_replicas_visitors_reconnect_to_a_live_one_and_it_is_started_again(served):
    dying, living = served.replica_ports()
    key, pid = served.pin(dying), served.pids()[dying]

    async def kill_and_reconnect():
        ws = await open_stream(served.url, key)
        assert port_of(ws.response.headers) == dying
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
        again = await open_stream(served.url, key)          # the browser reconnects: same cookie, live replica
        await again.close()
        return port_of(again.response.headers)
    assert asyncio.run(kill_and_reconnect()) == living
    deadline = time.monotonic() + 120
    while not (served.pids()[dying] != pid and healthy(f"http://127.0.0.1:{dying}")):
        assert time.monotonic() < deadline, served.output()[-2000:]
        time.sleep(0.5)
    assert "replica 1 exited (code -9); starting it again" in served.output()


@pytest.mark.slow
def test_sigterm_stops_nginx_and_every_replica(served):
    nginx = int(re.search(r"nginx pid (\d+)", served.output()).group(1))
    pids = [nginx, *served.pids().values()]
    assert served.stop() == 0
    time.sleep(0.5)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert all(port_free("127.0.0.1", p) for p in [served.port, *served.replica_ports()])


@pytest.mark.slow
def test_ctrl_c_in_a_terminal_stops_everything_without_an_error(tmp_path):
    served = Served(1, tmp_path / "serve.log", env={"ATTN_EXPLORER_CLASS_DB": str(tmp_path / "classes.sqlite3")})
    try:
        served.wait_ready()
        pids = list(served.pids().values())
        os.killpg(served.proc.pid, signal.SIGINT)          # as the terminal sends it: to the launcher and its children
        assert served.proc.wait(30) == 0, served.output()[-2000:]
        assert "nginx exited" not in served.output() and "starting it again" not in served.output()
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        served.stop()
