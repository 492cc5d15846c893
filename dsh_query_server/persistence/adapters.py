"""Reads through a mounted backend's contract (contract/): the whole log, or a window of it by the
cheapest path the mount offers (``Capabilities``), with each backend result checked once here."""

from __future__ import annotations

from typing import cast

from ..cancel import NULL_TOKEN, CancelToken
from ..model.event import Header
from .contract.results import Inspection, Window
from .mount.binding import Binding


def list_headers(binding: Binding, token: CancelToken = NULL_TOKEN) -> list[Header]:
    """``list``, checked to be headers: a backend that breaks the contract fails the listing
    (mapped like any backend failure), never the request with an internal error."""
    listed = cast(object, binding.backend.list(token))  # checked here, not trusted
    if not isinstance(listed, list):
        raise TypeError("persistence listing is not a list of session headers")
    headers = cast(list[object], listed)
    if not all(isinstance(h, Header) for h in headers):
        raise TypeError("persistence listing is not a list of session headers")
    return cast(list[Header], headers)


def checked_window(window: Window, first: int, last: int) -> Window:
    """A backend's window, checked to hold exactly the logical events first..last (clipped)."""
    expected = max(0, min(last, window.length - 1) - first + 1)
    if window.start != first or len(window.events) != expected:
        raise TypeError(f"persistence returned a window that does not hold events {first}..{last}")
    return window


def read_log(
    binding: Binding, session_id: str, token: CancelToken = NULL_TOKEN, *, outline: bool = False
) -> Inspection:
    """``inspect``; with ``outline``, the outline read when the backend has one (no payloads)."""
    reader = binding.capabilities.outline if outline else None
    if reader is not None:
        return reader.inspect_outline(session_id, token)
    return binding.backend.inspect(session_id, token)


def read_window(
    binding: Binding, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
) -> Window:
    """The logical events first..last (first >= 0): a window read when the backend has one,
    otherwise the whole log inspected and sliced (the same events and errors)."""
    reader = binding.capabilities.windows
    if reader is not None:
        return checked_window(reader.inspect_window(session_id, first, last, token), first, last)
    inspection = binding.backend.inspect(session_id, token)
    events = inspection.events
    return Window(inspection.meta, len(events), first, list(events[first : last + 1]))
