"""Is scripts/bench/bench_class.py's light client faithful to a browser? (its --check-browser)

One Chromium session (playwright, /usr/bin/chromium) and one light session open the explorer page and make the
same head switch. Compared: the rerun BackMsg each sends (widget ids and values, page hash, context fields) and
the deltas the server sends back for that run (paths and element types, in order). Prints what differs.
"""
from __future__ import annotations

import asyncio
import random
import time

from google.protobuf.json_format import MessageToDict
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

CHROMIUM = "/usr/bin/chromium"


def widget_values(msg: BackMsg) -> dict:
    """{widget id: value as JSON} of a rerun BackMsg."""
    return {w["id"]: {k: v for k, v in w.items() if k != "id"}
            for w in MessageToDict(msg.rerun_script.widget_states).get("widgets", [])}


def run_shape(frames: list) -> list:
    """(delta path, element or block type) of each delta among ForwardMsg payloads, up to script_finished."""
    shape = []
    for payload in frames:
        fwd = ForwardMsg.FromString(payload)
        if fwd.WhichOneof("type") == "script_finished":
            break
        if fwd.WhichOneof("type") == "delta":
            d = fwd.delta
            kind = "block" if d.WhichOneof("type") == "add_block" else d.new_element.WhichOneof("type")
            shape.append((tuple(fwd.metadata.delta_path), kind))
    return shape


def browser_switch(url: str, label: str, timeout_s: float) -> tuple[BackMsg, list]:
    """Open the page in Chromium, pick `label` in the Head selectbox; its rerun BackMsg and the frames it got."""
    from playwright.sync_api import sync_playwright
    sent, received = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(timeout_s * 1000)
            page.on("websocket", lambda ws: (ws.on("framesent", lambda b: sent.append((len(received), b))),
                                             ws.on("framereceived", lambda b: received.append(b))))
            page.goto(url)
            page.wait_for_selector(".js-plotly-plot text.gtitle")
            time.sleep(1.0)
            page.locator('[data-testid="stSelectbox"]').filter(has_text="Head").click()
            page.get_by_role("option", name=label, exact=True).click()
            deadline = time.time() + timeout_s
            while time.time() < deadline:
                reruns = [(i, BackMsg.FromString(b)) for i, b in sent if isinstance(b, bytes)]
                reruns = [(i, m) for i, m in reruns if m.WhichOneof("type") == "rerun_script"]
                start, msg = reruns[-1]
                frames = [b for b in received[start:] if isinstance(b, bytes)]
                if len(reruns) > 1 and any(ForwardMsg.FromString(b).WhichOneof("type") == "script_finished"
                                           for b in frames):
                    return msg, frames
                page.wait_for_timeout(200)
            raise TimeoutError("Chromium's head switch did not finish")
        finally:
            browser.close()


async def light_switch(url: str, session_cls, timeout_s: float) -> tuple:
    """The light client's first page, then a switch to the third head: (session, its run)."""
    s = session_cls(url)
    await s.open()
    await s.run("first", timeout_s)
    head = next(proto for wid, (kind, proto) in s.elements.items() if wid.endswith("-head"))
    s.switch("head", random.Random(0), label=head.options[2])
    run = await s.run("switch", timeout_s)
    await s.close()
    return s, run


def first_difference(a: list, b: list) -> int:
    """Index of the first place where two lists differ (the shorter length if one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def check_against_browser(url: str, session_cls, timeout_s: float = 600) -> bool:
    s, run = asyncio.run(light_switch(url, session_cls, timeout_s))
    ours = s.sent[-1]
    label = next(w.string_value for w in ours.rerun_script.widget_states.widgets if w.id.endswith("-head"))
    theirs, frames = browser_switch(url, label, timeout_s)
    problems = []
    a, b = widget_values(ours), widget_values(theirs)
    for wid in sorted(set(a) | set(b)):
        if a.get(wid) != b.get(wid):
            problems.append(f"widget {wid.rsplit('-', 1)[-1]}: client {a.get(wid)} browser {b.get(wid)}")
    if ours.rerun_script.page_script_hash != theirs.rerun_script.page_script_hash:
        problems.append("page_script_hash differs")
    def fields(m):
        return sorted(MessageToDict(m.rerun_script, preserving_proto_field_name=True))
    if fields(ours) != fields(theirs):
        problems.append(f"ClientState fields: client {fields(ours)}, browser {fields(theirs)}")
    shape = run_shape(frames)
    if run.deltas != shape:
        problems.append(f"deltas of the switch: client {len(run.deltas)}, browser {len(shape)} "
                        f"(first difference at {first_difference(run.deltas, shape)})")
    print(f"browser check (head -> {label!r}): {len(b)} widget states, {len(shape)} deltas in Chromium's run: "
          + ("the light client sent the same BackMsg and got the same deltas" if not problems else "DIFFERENT"))
    for p in problems:
        print("   ", p)
    return not problems
