"""``hub/render`` with ``titles`` (hub.md §2): a session listing with each record's current
title, rendered in the hub as ``dsh-query sessions --json`` prints it.

The rendered text is kept for the next request while it would come out the same: the listing is
the very same encoded answer (``listSessions`` hands back its previous answer while the corpus is
unchanged) and the titles read for it now are equal to the ones read then. Both are read afresh
on every request, so nothing stale is served; what is saved is decoding the listing, adding the
titles and indenting it all again. Title results that are the very same objects as the last ones
(``readTitles`` hands back its last batch's results while they are proven unchanged,
query/titlememo.py) have the same titles, so they are not looked at again.
"""

from __future__ import annotations

import operator
import weakref
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET, Raw

from .. import jsoncodec
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..model import wire


@dataclass(frozen=True, slots=True)
class _Rendered:
    listing: Raw
    ids: list[str]
    reads: list[wire.SessionTitleObservationResult]
    titles: list[str | None]
    text: Raw


def indented(result: Any) -> Raw:
    """A result as JSON indented by 2, without decoding a pre-encoded one: msgspec indents in C,
    where the client's json.dumps with an indent runs in Python."""
    raw = result if type(result) is Raw else Raw(jsoncodec.dumps(result))
    return Raw(msgspec.json.format(raw, indent=2))


def title_of(read: wire.SessionTitleObservationResult) -> str | None:
    """A title result's title text, None when it has none (or only a blank one)."""
    value = read.value
    if isinstance(value, wire.SessionTitleObservation) and value.title is not UNSET:
        title = value.title.title
        if title.strip():
            return title
    return None


class TitledListings:
    """The last titled listing one runtime rendered (see the module's docstring)."""

    def __init__(self) -> None:
        self._last: _Rendered | None = None

    def render(self, rt: Runtime, records: Any, token: CancelToken) -> Raw:
        """The records with ``title`` added last where the session has a non-blank title (one
        ``readTitles`` of their ids), indented."""
        listing = records if type(records) is Raw else Raw(jsoncodec.dumps(records))
        last = self._last
        out: list[dict[str, Any]] | None = None
        if last is not None and last.listing is listing:
            ids = last.ids
        else:
            last, out = None, _records(listing)
            ids = [record["header"]["id"] for record in out]
        reads = rt.service.read_titles(ids, token)
        if last is not None and _same_objects(last.reads, reads):
            return last.text
        titles = [title_of(read) for read in reads]
        if last is not None and last.titles == titles:
            self._last = _Rendered(listing, ids, reads, titles, last.text)
            return last.text
        if out is None:  # the same listing, other titles: decoded again (the kept one is shared)
            out = _records(listing)
        for record, title in zip(out, titles, strict=True):
            if title is not None:
                record["title"] = title
        text = indented(out)
        self._last = _Rendered(listing, ids, reads, titles, text)
        return text


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _records(listing: Raw) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = msgspec.json.decode(listing)
    return records


_TITLED: weakref.WeakKeyDictionary[Runtime, TitledListings] = weakref.WeakKeyDictionary()


def titled_listing(rt: Runtime, records: Any, token: CancelToken) -> Raw:
    """``TitledListings.render`` for the runtime's own kept text."""
    titled = _TITLED.get(rt)
    if titled is None:
        titled = _TITLED.setdefault(rt, TitledListings())
    return titled.render(rt, records, token)


__all__ = ["TitledListings", "indented", "title_of", "titled_listing"]
