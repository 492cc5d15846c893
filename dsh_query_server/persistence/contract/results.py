"""What the persistence contract's reads return (persistence.md §2): listings, inspections,
windows, stored logs and raw artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec
from msgspec import UNSET

from ...model.event import Event, Header


@dataclass(frozen=True, slots=True)
class SessionRawArtifact:
    """A session's stored log as bytes (tools.md §2.1): what export writes verbatim."""

    meta: Header
    filename: str
    content: bytes


@dataclass(frozen=True, slots=True)
class SessionLocation:
    """Where a session's artifact lives (informational, tools.md §2.1)."""

    kind: str
    path: str


@dataclass(frozen=True, slots=True)
class SkippedArtifact:
    """A stored artifact the last listing left out because it is damaged (a JSONL transcript
    whose header line is invalid, persistence.md §4.8 step 4.5), for sessionPersistence/status
    [ours]: the file, the id its place names, and what ``inspect`` would say of it."""

    path: str
    session_id: str
    message: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    header: Header
    revision: str


@dataclass(frozen=True, slots=True)
class Inspection:
    """The logical log: stored valid prefix, normalized, plus in-memory closers."""

    meta: Header
    events: list[Event] = field(default_factory=list[Event])


@dataclass(frozen=True, slots=True)
class Window:
    """A slice of the logical log that ``inspect`` would return, read without decoding the rest.

    ``events`` are the logical events ``start`` .. ``start + len(events) - 1``: the requested
    range clipped to the log, whose length is ``length``. A backend offers it through the optional
    ``inspect_window(id, first, last, token)``, with the errors ``inspect`` would raise."""

    meta: Header
    length: int
    start: int
    events: list[Event] = field(default_factory=list[Event])
    title: int | None = None  # seq of the log's last session/title event (title reads), if any
    # The revision (persistence.md §2.4) of exactly what was read, when the backend knows it
    # (logical/windows.py does): a title read remembers its answer under it (query/titlememo.py).
    revision: str | None = None


@dataclass(frozen=True, slots=True)
class StoredLog:
    """What the storage holds for one session, before legacy normalization and closers.

    ``torn`` is true when the physical log has a torn tail (or a torn Zstandard frame) that an
    append must refuse. ``revision`` is the revision of exactly the bytes or rows read."""

    header: Header
    events: list[Event]
    torn: bool
    revision: str


class Reading(msgspec.Struct, frozen=True):
    """What the caller of a bulk or title read reads of each event (issue 28) [ours]: the text
    (model/text.py ``extract_text``) of the types in ``texts``, the whole event of the types in
    ``whole``, and of any other event its envelope only. An event whose type is not in ``whole``
    may then come as an EventOutline: the index build reads texts, a title read one type whole.
    """

    texts: frozenset[str] = frozenset()
    whole: frozenset[str] = frozenset()


Payloads = Reading | None  # None: every event whole


class EventOutline(msgspec.Struct, frozen=True, gc=False):
    """An event of a read with ``Payloads`` (a ``Reading``), known by its envelope and, when its
    type is one whose text the caller reads, its text: what the fold and the index read of it, so they treat it as
    they treat the event. It has no payload (no ``data``, no ``raw``): the importer kept only the
    text it would give, never encoding the payload. A tool/result that replaces a node is never
    outlined (the fold compares its payload with the one it rewrites). Untracked by the garbage
    collector: a long log makes tens of thousands of them [ours]."""

    type: str
    seq: int
    time: int
    text: str = ""  # ``extract_text`` of the event when its type is in ``Reading.texts``, else ""
    surface_op: Any = UNSET
    source_seqs: Any = UNSET

    ignorable: ClassVar[Any] = UNSET


@dataclass(frozen=True, slots=True)
class Digest:
    """A function ``(session_id, Inspection) -> list[bytes]`` named by module and attribute, which a
    bulk read's worker process may run on what it read (issue 28) [ours]: the index build has
    the worker make the documents too, so only they cross the pipe. The caller owns the bytes'
    format; a digest that raises leaves the id to the caller's own read, errors and all."""

    module: str
    name: str


@dataclass(frozen=True, slots=True)
class Digested:
    """A bulk read's answer for an id that a worker read and digested: the header ``inspect``
    would give and the digest's parts of the Inspection, back to back in ``data`` (``ends``:
    where each one ends)."""

    meta: Header
    data: memoryview
    ends: list[int]


# What ``BulkInspector.inspect_many`` gives for one id: the Inspection ``inspect`` would return
# (or, with a ``Digest``, possibly its Digested form), the exception it would raise, or None when
# the id is left to the caller's own read.
BulkResult = Inspection | Digested | Exception | None
