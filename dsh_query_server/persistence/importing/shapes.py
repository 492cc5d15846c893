"""Shape reads of imported logs (importers.md §3.4) [ours]: a log's header, length and last title
without a window memo.

Titles and the tree's labels ask a log only its shape (an empty window: the header, the length,
where the last ``session/title`` is) and then that one event (query/titlefold.py). Without a
memo of the revision, the first read used to map the transcript whole and build the memo (every
event encoded, every residual checked), which most listed sessions never use: 888 titles of the
305 MB real-content home took ~14 s. A shape read maps the transcript keeping only its
``session/title`` events whole and every other event as an outline (``TITLE_READING``), and
remembers the shape of that revision, so the title's own window is answered from it. Any other
window still reads the log whole and builds the memo.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from ...model.event import Event, Header
from ..contract.results import Inspection, Reading, Window
from .window import MemoKey

TITLE = "session/title"
TITLE_READING = Reading(whole=frozenset({TITLE}))
KEPT = 4096  # shapes remembered (a header and one title event each)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a shape read of one revision found."""

    meta: Header
    length: int
    title: Event | None  # the last session/title event, whole

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


class Shapes:
    """One shape per session id (its latest revision), least recently used first out."""

    def __init__(self, kept: int = KEPT) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[MemoKey, Shape]] = OrderedDict()
        self._kept = kept

    def get(self, session_id: str, key: MemoKey) -> Shape | None:
        with self._lock:
            hit = self._entries.get(session_id)
            if hit is None or hit[0] != key:
                return None
            self._entries.move_to_end(session_id)
            return hit[1]

    def put(self, session_id: str, key: MemoKey, shape: Shape) -> None:
        with self._lock:
            self._entries.pop(session_id, None)
            self._entries[session_id] = (key, shape)
            while len(self._entries) > self._kept:
                self._entries.popitem(last=False)
