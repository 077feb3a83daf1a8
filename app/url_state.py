"""A page's state in its URL, so that a link opens the same view: ?checkpoint=news-small&layer=5&head=3.

A page declares its controls as Params (the name in the URL, the widget's key, how to read the URL's text) and calls
restore() before drawing them and publish() after. restore() takes a link's values (once: a value the page wrote
itself is not read back) and otherwise brings back the values the page had when the student left it (Streamlit
forgets a widget's value when another page runs). A value a link cannot use (an unknown checkpoint, layer 9 of 6, a
word for a number, a 50,000-character sentence) gives the nearest sensible one and a short notice, never an error.
publish() writes the controls' values to the URL (a value at its default is left out) and the sidebar's "Copy link".
Layers and heads count from 1 in the URL, as on every page. Values live in st.session_state: one student's state
never reaches another's.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

LEAD = "checkpoint"        # the first value of every link: the others are read against its model
PRIVATE = ("teach", "seat")   # a class's teacher secret and a student's seat (app/lesson/): never in a copied link
MAX_TEXT = 5000            # characters of a sentence read from a link (a model reads far fewer tokens)
WRITTEN = "url_written"    # session_state: {page: {name: text}} last written to the URL (not read back as a link)
SAVED = "url_saved"        # session_state: {page: {key: value}} the controls' values when the page last ran
_link_place: ContextVar = ContextVar("link_place", default=None)   # the sidebar's "Copy link", this rerun's


class LinkValueError(ValueError):
    """A link's value that cannot be used as it is: the message says why, `nearest` is what to show instead."""

    def __init__(self, message: str, nearest: Any = None):
        super().__init__(message)
        self.nearest = nearest


@dataclass(frozen=True)
class Param:
    """One control kept in the URL: its name there, its widget's key, its default (left out of the URL), how to read
    the URL's text (LinkValueError when it cannot be used as it is) and how to write a value."""
    name: str
    key: str
    default: Any
    read: Callable[[str], Any]
    write: Callable[[Any], str] = str


def number(name: str, key: str, n: int | Callable[[], int], default: int | None, what: str,
           first: int = 0) -> Param:
    """A layer or head: 1..n in the URL, first..first+n-1 in the app (an index: 0); out of range gives the nearest
    one. n may be a function, asked when the link is read (the layers of the kind of attention the link names)."""
    def read(text: str) -> int:
        n_now = n() if callable(n) else n
        try:
            shown = int(text)
        except ValueError:
            shown = "" if default is None else f"; showing {what} {default + 1 - first}"
            raise LinkValueError(f"'{text[:20]}' is not a {what} number{shown}.", default) from None
        if not 1 <= shown <= n_now:
            nearest = min(max(shown, 1), n_now)
            raise LinkValueError(f"There is no {what} {shown}: this model has {what}s 1 to {n_now}; showing {what} "
                           f"{nearest}.",
                           nearest - 1 + first)
        return shown - 1 + first
    return Param(name, key, default, read, lambda i: str(int(i) + 1 - first))


def numbers(name: str, key: str, n: int, default: list[int], what: str) -> Param:
    """Several heads: indices in the app, "3,7" (from 1) in the URL; those out of range are left out."""
    def read(text: str) -> list[int]:
        try:
            shown = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            raise LinkValueError(f"'{text[:20]}' is not a list of {what} numbers such as 3,7.", default) from None
        kept = sorted({i - 1 for i in shown if 1 <= i <= n})
        if len(kept) < len(shown):
            raise LinkValueError(f"This model has {what}s 1 to {n}: the others in the link are left out.", kept)
        return kept
    return Param(name, key, default, read, lambda ids: ",".join(str(int(i) + 1) for i in ids))


def choice(name: str, key: str, options: Sequence | Mapping, default: Any, what: str) -> Param:
    """One of a few options; in the URL by its name (a Mapping: {name in the URL: value}, else the value itself)."""
    by_name = dict(options) if isinstance(options, Mapping) else {str(o): o for o in options}
    names = {v: k for k, v in by_name.items()}

    def read(text: str):
        if text in by_name:
            return by_name[text]
        shown = "" if default is None else f"; showing {names.get(default, default)}"
        raise LinkValueError(f"'{text[:20]}' is not a {what} here ({', '.join(list(by_name)[:8])}){shown}.", default)
    return Param(name, key, default, read, lambda v: names.get(v, str(v)))


def flag(name: str, key: str, default: bool) -> Param:
    """A switch: 1 or 0 in the URL (true, false, on, off, yes and no are read too)."""
    def read(text: str) -> bool:
        low = text.strip().lower()
        if low in ("1", "true", "on", "yes"):
            return True
        if low in ("0", "false", "off", "no"):
            return False
        raise LinkValueError(f"'{text[:20]}' is not on (1) or off (0) for '{name}'; left as it was.", default)
    return Param(name, key, default, read, lambda v: "1" if v else "0")


def text(name: str, key: str, default: str = "", max_chars: int = MAX_TEXT) -> Param:
    """A sentence: cut to max_chars characters (with a notice)."""
    def read(value: str) -> str:
        if len(value) > max_chars:
            raise LinkValueError(f"The link's text has {len(value):,} characters: only its first {max_chars:,} "
                                 "are used.", value[:max_chars])
        return value
    return Param(name, key, default, read)


def checkpoint(names: Sequence[str]) -> Param:
    """The sidebar's checkpoint, by its folder name; an unknown one leaves the sidebar's own choice."""
    def read(value: str) -> str:
        if value in names:
            return value
        raise LinkValueError(f"This computer has no checkpoint named '{value[:40]}': showing another one (the "
                             "sidebar lists those it has).")
    return Param("checkpoint", "checkpoint", None, read)


def slug(label: str) -> str:
    """A label as a link names it: "Head finder" -> "head-finder"."""
    return "-".join("".join(c if c.isalnum() else " " for c in label.lower()).split())


def _state(slot: str, page: str) -> dict:
    return st.session_state.setdefault(slot, {}).setdefault(page, {})


def restore(page: str, params: list[Param]) -> set[str]:
    """Before the page's controls are drawn: a link's values, else the values the page had when last left (a value
    the page wrote itself is not read back). Notices for the values a link could not use. Returns the names of the
    values taken from a link."""
    written, saved = _state(WRITTEN, page), _state(SAVED, page)
    linked = set()
    for p in params:
        raw = st.query_params.get(p.name)
        if raw is not None and raw != written.get(p.name):
            written[p.name] = raw                       # read once: a notice is not repeated on every rerun
            try:
                st.session_state[p.key] = p.read(raw)
                linked.add(p.name)
            except LinkValueError as e:
                st.toast(str(e), icon=":material/link_off:", duration="long")   # 10 s: time to read it
                if e.nearest is not None:
                    st.session_state[p.key] = e.nearest
        elif p.key not in st.session_state and p.key in saved:
            st.session_state[p.key] = saved[p.key]
    return linked


def publish(page: str, params: list[Param]) -> None:
    """After the page's controls: their values in the URL (those at their default left out) and in "Copy link"."""
    written, saved = _state(WRITTEN, page), _state(SAVED, page)
    for p in params:
        if p.key not in st.session_state:
            continue
        value = st.session_state[p.key]
        saved[p.key] = value
        shown = None if value == p.default or value is None else p.write(value)
        if shown is None:
            if p.name in st.query_params:
                del st.query_params[p.name]
            written.pop(p.name, None)
        else:
            if st.query_params.get(p.name) != shown:
                st.query_params[p.name] = shown
            written[p.name] = shown
    if LEAD in st.query_params and next(iter(st.query_params)) != LEAD:     # the sidebar's, written first or not
        rest = {k: v for k, v in st.query_params.to_dict().items() if k != LEAD}
        st.query_params.from_dict({LEAD: st.query_params[LEAD], **rest})
    show_link()


def page_link() -> str:
    """This view's link: the page's address (st.context.url, None in tests) and its query parameters."""
    query = urlencode({k: v for k, v in st.query_params.to_dict().items() if k not in PRIVATE})
    return (st.context.url or "") + (f"?{query}" if query else "")


def link_place(place) -> None:
    """Where this rerun's "Copy link" goes (an st.empty() in the sidebar, made by app/main.py)."""
    _link_place.set(place)


def show_link() -> None:
    """The "Copy link" popover with this view's link (its copy button copies it), redrawn as the URL changes."""
    place = _link_place.get()
    if place is None:
        return
    with place.popover("Copy link", icon=":material/link:", width="stretch",
                       help="A link to this page as you see it now: checkpoint, sentence and map included."):
        st.code(page_link(), language=None, wrap_lines=True)
        st.caption("The copy button at the right of the link copies it. Whoever opens it sees this view "
                   "(if their computer has the same checkpoint).")
