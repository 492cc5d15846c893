"""The title fold (semantics.md §3.8): a log's title is its last ``session/title`` event, with
its source copied by kind. Shared by readTitles and the sidebar labels."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import errors
from ..errors import QueryError
from ..model import wire
from ..model.event import Event
from ..persistence.contract.results import Window
from ..values import json_number


def title_window(read: Callable[[int, int], Window], seq: int) -> Window | None:
    """The window holding just the ``session/title`` event at ``seq``, where a verified log said
    its last title is (``Window.title``); None when the log has moved since and ``seq`` is no
    longer its last title."""
    found = read(seq, seq)
    if found.title == seq and found.events and found.events[0].type == "session/title":
        return found
    return None


def last_title_event(events: Sequence[Event]) -> Event | None:
    return next((e for e in reversed(events) if e.type == "session/title"), None)


def title_from(sid: str, event: Event | None) -> wire.SessionTitleSnapshot | None:
    """The title fold, given the last ``session/title`` event: its source copied by kind."""
    if event is None:
        return None
    data = event.data()
    malformed = QueryError(
        errors.CORRUPT_SESSION,
        f'session "{sid}" has a malformed session/title event at seq {json_number(event.seq)}',
        session_id=sid,
    )
    if not isinstance(data, dict) or not isinstance(data.get("title"), str):
        raise malformed
    seqs, source = data.get("messageSeqs"), data.get("source")
    if not isinstance(seqs, list) or not isinstance(source, dict):
        raise malformed
    kind = source.get("kind")
    if kind in ("fallback", "user"):
        copied: dict[str, Any] = {"kind": kind}
    elif kind == "provider":
        if not isinstance(source.get("provider"), str):
            raise malformed
        copied = {"kind": "provider", "provider": source["provider"]}
        if "model" in source:
            if not isinstance(source["model"], dict):
                raise malformed
            copied["model"] = source["model"]
    else:
        raise malformed
    return wire.SessionTitleSnapshot(
        title=data["title"],
        messageSeqs=seqs,
        source=copied,
        eventSeq=event.seq,
        updatedAt=event.time,
    )
