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
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.event import Event, Header
from ..contract.results import Inspection, Reading, Window

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
