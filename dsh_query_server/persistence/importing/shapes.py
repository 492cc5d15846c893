"""Shape reads of imported logs (importers.md §3.4) [ours]: a log's header, length and last title
without a window memo.

Titles and the tree's labels ask a log only its shape (an empty window: the header, the length,
where the last ``session/title`` is) and then that one event (query/titlefold.py). Without a
memo of the revision, the first read used to map the transcript whole and build the memo (every
event encoded, every residual checked), which most listed sessions never use: 888 titles of the
305 MB real-content home took ~14 s. A shape read maps the transcript keeping only its
``session/title`` events whole and every other event as an outline (``TITLE_READING``), and
remembers the shape of that revision (a WindowMemos of its own, LRU within BUDGET), so the
title's own window is answered from it. Any other window still reads the log whole and builds
the memo.

A batch of titles reads its logs' shapes in one bulk read first (``ImportBackend.read_shapes``):
a worker process maps the logs while this one takes their shapes (``shape_digest``: only the
length and the title cross the pipe), so the titled listing of a large home uses both cores. A
shape is remembered only when the transcript's stat after its read is the one the listing
proved (the read saw that revision); any other is read again by the title itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ...model.event import Event, Header
from ..contract.results import Digest, Digested, Inspection, Reading, Window

TITLE = "session/title"
TITLE_READING = Reading(whole=frozenset({TITLE}))
BUDGET = 4 * 1024 * 1024  # the shapes remembered, in bytes (a header and one title each)
_SHAPE_COST = 256


@dataclass(frozen=True, slots=True)
class Shape:
    """What a shape read of one revision found."""

    meta: Header
    length: int
    title: Event | None  # the last session/title event, whole

    @property
    def size(self) -> int:
        title = 0 if self.title is None else len(self.title.raw)
        return len(self.meta.raw) + title + _SHAPE_COST

    @classmethod
    def of(cls, ins: Inspection) -> Shape:
        title = next((e for e in reversed(ins.events) if e.type == TITLE), None)
        return cls(ins.meta, len(ins.events), title)

    def window(self, first: int, last: int, revision: str | None) -> Window | None:
        """The window first..last when this shape holds it: an empty one, or the title's own;
        None for any other (the caller reads the log)."""
        seq = None if self.title is None else int(self.title.seq)
        lo = min(max(first, 0), self.length)
        hi = min(last, self.length - 1)
        if hi < lo:
            return Window(self.meta, self.length, lo, [], seq, revision)
        if seq is not None and lo == hi == seq and self.title is not None:
            return Window(self.meta, self.length, lo, [self.title], seq, revision)
        return None


# The digest a worker sends for a shape read: the log's length and its last title's JSON.
SHAPE_DIGEST = Digest(__name__, "shape_digest")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(tuple[int, bytes | None]).decode


def shape_digest(session_id: str, inspection: Inspection) -> list[bytes]:
    """results.Digest, run in the worker on a ``TITLE_READING`` read."""
    del session_id
    shape = Shape.of(inspection)
    return [_encode((shape.length, None if shape.title is None else shape.title.raw))]


def shape_of(result: Inspection | Digested) -> Shape:
    """The shape a bulk read answered (raises ValueError for bytes that are no shape digest)."""
    if isinstance(result, Inspection):
        return Shape.of(result)
    try:
        length, title = _decode(result.data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not a shape digest: {exc}") from None
    return Shape(result.meta, length, None if title is None else Event.from_json(title))
