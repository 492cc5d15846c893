"""What a backend returns, checked once, for the door (reads.py): a backend that breaks the
contract fails the read that asked (mapped like any backend failure), never the request with an
internal error."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any, cast

from ..model.event import Header
from .contract.results import BulkResult, Snapshot, Window

_NOT_HEADERS = "persistence listing is not a list of session headers"


def checked_headers(listed: object) -> list[Header]:
    """``list``'s result: a list of headers, returned as it is (the very objects listed)."""
    if not isinstance(listed, list):
        raise TypeError(_NOT_HEADERS)
    headers = cast(list[object], listed)
    if not all(isinstance(h, Header) for h in headers):
        raise TypeError(_NOT_HEADERS)
    return cast(list[Header], headers)


def checked_lookup(found: object, session_id: str) -> Header | None:
    """``list_one``'s result: None, or a header of that id (anything else fails like a listing
    of non-headers)."""
    if found is None or (isinstance(found, Header) and found.id == session_id):
        return found
    raise TypeError(_NOT_HEADERS)


def checked_window(window: Window, first: int, last: int) -> Window:
    """A backend's window, checked to hold exactly the logical events first..last (clipped)."""
    expected = max(0, min(last, window.length - 1) - first + 1)
    if window.start != first or len(window.events) != expected:
        raise TypeError(f"persistence returned a window that does not hold events {first}..{last}")
    return window


def bulk_results(
    session_ids: Sequence[str], answered: Iterator[tuple[str, BulkResult]]
) -> Iterator[BulkResult]:
    """``inspect_many``'s answers, checked to be for the ids asked, in order."""
    for session_id, (read_id, result) in zip(session_ids, answered, strict=True):
        if read_id != session_id:
            raise ValueError(f"bulk inspection answered {read_id!r} for {session_id!r}")
        yield result


class Snapshots:
    """A checked ``list_snapshots`` result (semantics.md §6.5 step 2.1): snapshots by id, in
    listing order."""

    __slots__ = ("by_id", "snapshots", "source")

    def __init__(self, by_id: dict[str, Snapshot], source: object) -> None:
        self.by_id = by_id
        self.snapshots = tuple(by_id.values())
        # A tuple result cannot change afterwards: handed back again, it is this listing.
        self.source: object = source if type(source) is tuple else None


def _snapshot(item: object) -> Snapshot:
    header: object
    revision: object
    if (
        type(item) is Snapshot
        and type(item.revision) is str
        and isinstance(cast(object, item.header), Header)  # a dataclass checks nothing itself
    ):
        return item  # our backends' snapshots are already immutable and well-formed
    if isinstance(item, Snapshot):
        header, revision = item.header, item.revision
    elif isinstance(item, dict):
        fields = cast(dict[str, object], item)
        header, revision = fields.get("header"), fields.get("revision")
    else:
        raise TypeError("persistence snapshot must be an object with header and revision")
    if not isinstance(revision, str):
        raise TypeError("persistence snapshot revision must be a string")
    if isinstance(header, dict):
        header = Header.from_value(cast(dict[str, Any], header))
    if not isinstance(header, Header):
        raise TypeError("persistence returned a header that is not a JSON object")
    return Snapshot(header, revision)


def validate_snapshots(result: object) -> Snapshots:
    if not isinstance(result, (list, tuple)):
        raise TypeError("persistence snapshots must be an array")
    by_id: dict[Any, Snapshot] = {}
    for item in cast(Sequence[object], result):
        snapshot = _snapshot(item)
        if snapshot.header.id in by_id:
            raise ValueError(f'persistence listed duplicate session "{snapshot.header.id}"')
        by_id[snapshot.header.id] = snapshot
    return Snapshots(by_id, cast(object, result))


def checked_snapshots(result: object, known: Snapshots | None) -> Snapshots:
    """A result that lists exactly ``known`` again is ``known`` itself, without re-validating
    it row by row."""
    if known is not None and _lists_again(result, known):
        return known
    return validate_snapshots(result)


def _lists_again(result: object, known: Snapshots) -> bool:
    """True when ``result`` holds the snapshots of ``known`` in the same order: the very same
    objects (a backend reusing its unchanged listing), or the same immutable headers with equal
    revisions. Either way it validates exactly as ``known`` did."""
    if known.source is not None and result is known.source:
        return True
    if type(result) is not list and type(result) is not tuple:
        return False
    items = cast(Sequence[object], result)
    if len(items) != len(known.snapshots):
        return False
    if all(map(operator.is_, items, known.snapshots)):
        return True
    return all(
        type(new) is Snapshot
        and new.header is old.header
        and type(new.revision) is str
        and new.revision == old.revision
        for new, old in zip(items, known.snapshots, strict=True)
    )
