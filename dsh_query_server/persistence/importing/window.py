"""Window reads of imported logs (importers.md §3.4).

While a full ``inspect`` maps a transcript, a ``MemoBuilder`` notes for every event where its
line is (plaintext offset, length, the record's ordinal in the line) and the event's *residual*:
its JSON with every value taken from that record replaced by a path into it. What remains are the
context-dependent parts (seq, time, surfaceOp, sourceEventSeqs, turn, step, id suffixes, title
decisions) and small literals. A window read re-reads and re-splits only the window's lines and
rebuilds each event from its line and its residual. Each residual is checked at build time
against a fresh split of its line, so a rebuilt event is byte-identical to ``inspect``'s; an event
that cannot be rebuilt that way (its content came from another line, or its residual is large)
has no residual, and a window holding one is read by a full ``inspect``. Never events are kept.
"""

from __future__ import annotations

import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, cast

from ... import jsoncodec
from ...cancel import CancelToken
from ...model.event import Event, Header
from .emitter import JSONObject
from .lines import Item, Line, Record, final_fragment, plaintext, split_line

REF = "\u0000"  # a residual's reference: {"\u0000": [path...]} (collisions fail the check)
LITERAL_LIMIT = 2048  # a residual larger than this holds content: no residual
MIN_REF_STRING = 8
MEMO_BUDGET = 64 * 1024 * 1024
_ENTRY_OVERHEAD = 64  # offsets, ordinal, the bytes object's header

JSONValue = object


Links = dict[int, tuple[int, str | int] | None]  # id -> (parent's id, key); the root: None


def _index(value: JSONValue, out: Links) -> None:
    """``id`` of every container and long string of a parsed record -> its parent and key (a
    path is spelled out only for what an event takes: most nodes are never referenced)."""
    out[id(value)] = None
    stack: list[JSONValue] = [value]
    while stack:
        node = stack.pop()
        parent = id(node)
        members: Iterator[tuple[str | int, object]] = (
            iter(cast(dict[str, object], node).items())
            if type(node) is dict
            else enumerate(cast(list[object], node))
        )
        for k, v in members:
            t = type(v)
            if t is dict or t is list:
                out[id(v)] = (parent, k)
                stack.append(v)
            elif t is str and len(cast(str, v)) >= MIN_REF_STRING:
                out[id(v)] = (parent, k)


def _ref(links: Links, key: int) -> JSONValue:
    path: list[str | int] = []
    link = links[key]
    while link is not None:
        path.append(link[1])
        link = links[link[0]]
    path.reverse()
    return {REF: path}


def _residual(value: JSONValue, ids: Links) -> JSONValue:
    """``value`` with every object the record gave replaced by a reference to it."""
    if id(value) in ids:
        return _ref(ids, id(value))
    t = type(value)
    if t is dict:
        out: dict[str, object] = {}
        for k, v in cast(dict[str, object], value).items():
            if id(v) in ids:
                out[k] = _ref(ids, id(v))
            else:
                tv = type(v)
                out[k] = _residual(v, ids) if tv is dict or tv is list else v
        return out
    if t is list:
        return [_residual(v, ids) for v in cast(list[object], value)]
    return value


def _lookup(record: JSONValue, path: list[object]) -> JSONValue:
    node = record
    for step in path:
        if isinstance(step, int) and isinstance(node, list):
            node = cast(list[object], node)[step]
        elif isinstance(step, str) and isinstance(node, dict):
            node = cast(dict[str, object], node)[step]
        else:
            raise KeyError(step)
    return node


# A reference as msgspec writes it: {"\u0000":[path]}. Text inside a JSON string never matches
# (its quotes are escaped); a real object of that shape fails the build-time check.
_MARK = re.compile(rb'\{"\\u0000":(\[[^\]]*\])\}')


def _resplit(raw: bytes, final: bool, start: int) -> list[Item]:
    return final_fragment(raw, 0, start) if final else split_line(raw, 0, start)


def _event(residual: bytes, record: JSONValue) -> bytes | None:
    """The event's bytes: the residual with each reference replaced by the JSON of the record's
    value at that path (msgspec writes a value the same wherever it sits)."""
    out: list[bytes] = []
    at = 0
    try:
        for m in _MARK.finditer(residual):
            out.append(residual[at : m.start()])
            out.append(jsoncodec.dumps(_lookup(record, jsoncodec.loads(m.group(1)))))
            at = m.end()
    except (KeyError, IndexError, ValueError, TypeError):
        return None
    if not out:
        return residual
    out.append(residual[at:])
    return b"".join(out)


@dataclass(slots=True)
class WindowMemo:
    """Positions and residuals of one log at one revision."""

    header: Header
    starts: array[int]
    lengths: array[int]  # -1: no line needed (no record gave it values); -2: no residual
    ordinals: array[int]
    finals: bytearray
    residuals: list[bytes]
    title: int | None
    size: int

    @property
    def length(self) -> int:
        return len(self.residuals)

    def read(
        self, path: str, compressed: bool, first: int, last: int, token: CancelToken
    ) -> list[Event] | None:
        """Events first..last (already clipped) rebuilt from their lines, or None when one has
        no residual or a line no longer holds its record."""
        seqs = range(first, last + 1)
        if any(self.lengths[s] == -2 for s in seqs):
            return None
        wanted = sorted({(self.starts[s], self.lengths[s]) for s in seqs if self.lengths[s] >= 0})
        lines = _read_lines(path, compressed, wanted, token)
        if lines is None:
            return None
        out: list[Event] = []
        split: dict[int, list[Item]] = {}
        for s in seqs:
            record: JSONValue = None
            if self.lengths[s] >= 0:
                start = self.starts[s]
                items = split.get(start)
                if items is None:
                    raw = lines[start]
                    if not self.finals[s] and not raw.endswith(b"\n"):
                        return None
                    body = raw if self.finals[s] else raw[:-1]
                    items = split[start] = _resplit(body, bool(self.finals[s]), start)
                k = self.ordinals[s]
                item = items[k] if k < len(items) else None
                if not isinstance(item, Record):
                    return None
                record = item.value
            raw_event = _event(self.residuals[s], record)
            if raw_event is None:
                return None
            out.append(Event.from_json(raw_event))
        return out


def _read_lines(
    path: str, compressed: bool, wanted: list[tuple[int, int]], token: CancelToken
) -> dict[int, bytes] | None:
    """The bytes at each (start, length) plus the following 0x0A when there is one."""
    out: dict[int, bytes] = {}
    if not wanted:
        return out
    with open(path, "rb") as stream:
        if not compressed:
            for start, length in wanted:
                token.raise_if_cancelled()
                stream.seek(start)
                out[start] = stream.read(length + 1)
            return out
        end = max(s + n + 1 for s, n in wanted)
        buf = bytearray()
        for piece in _until(plaintext(stream, 1 << 62, token, True), end):
            buf += piece
        for start, length in wanted:
            out[start] = bytes(buf[start : start + length + 1])
    return out


def _until(pieces: Iterator[bytes], end: int) -> Iterator[bytes]:
    got = 0
    for piece in pieces:
        yield piece
        got += len(piece)
        if got >= end:
            return


class MemoBuilder:
    """Fed by the reading loop (``line``, ``item``) and the emitter (``emitted``)."""

    def __init__(self) -> None:
        self.starts: array[int] = array("q")
        self.lengths: array[int] = array("q")
        self.ordinals: array[int] = array("i")
        self.finals = bytearray()
        self.residuals: list[bytes] = []
        self.size = 0
        self.title: int | None = None
        self._line: Line | None = None
        self._ordinal = 0
        self._ids: Links | None = None
        self._record: Record | None = None
        self._fresh: list[Item] | None = None

    def line(self, line: Line) -> None:
        self._line, self._fresh = line, None

    def item(self, ordinal: int, item: Item | None) -> None:
        self._ordinal = ordinal
        self._record = item if isinstance(item, Record) else None
        self._ids = None

    def end(self) -> None:
        """Events emitted after this come from no line (end of file)."""
        self._line, self._record, self._ids = None, None, None

    def emitted(self, value: JSONObject, raw: bytes) -> None:
        if value.get("type") == "session/title":
            self.title = len(self.residuals)
        line, record = self._line, self._record
        if record is not None and self._ids is None:
            self._ids = {}
            _index(record.value, self._ids)
        residual = jsoncodec.dumps(_residual(value, self._ids or {}))
        fresh: JSONValue = None
        if record is not None and line is not None:
            if self._fresh is None:
                self._fresh = _resplit(line.raw, line.final, line.start)
            k = self._ordinal
            again = self._fresh[k] if k < len(self._fresh) else None
            fresh = again.value if isinstance(again, Record) else None
        ok = len(residual) <= LITERAL_LIMIT and _event(residual, fresh) == raw
        at = line if record is not None else None  # an event of no record needs no line
        self.starts.append(at.start if at is not None else 0)
        self.lengths.append((at.length if at is not None else -1) if ok else -2)
        self.ordinals.append(self._ordinal)
        self.finals.append(1 if at is not None and at.final else 0)
        self.residuals.append(residual if ok else b"")
        self.size += _ENTRY_OVERHEAD + (len(residual) if ok else 0)

    def finish(self, header: Header) -> WindowMemo:
        return WindowMemo(
            header,
            self.starts,
            self.lengths,
            self.ordinals,
            self.finals,
            self.residuals,
            self.title,
            self.size,
        )


MemoKey = tuple[str, tuple[int, int, int, int], str]  # path, stat key, revision's other parts


class Sized(Protocol):
    @property
    def size(self) -> int: ...


M = TypeVar("M", bound=Sized)


class WindowMemos(Generic[M]):
    """One memo per session id (its latest revision), least recently used first out once they
    pass the budget together (window memos, and the shapes of shapes.py)."""

    def __init__(self, budget: int = MEMO_BUDGET) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[MemoKey, M]] = OrderedDict()
        self._size = 0
        self._budget = budget

    def get(self, session_id: str, key: MemoKey) -> M | None:
        with self._lock:
            hit = self._entries.get(session_id)
            if hit is None or hit[0] != key:
                return None
            self._entries.move_to_end(session_id)
            return hit[1]

    def put(self, session_id: str, key: MemoKey, memo: M) -> None:
        with self._lock:
            old = self._entries.pop(session_id, None)
            if old is not None:
                self._size -= old[1].size
            if memo.size > self._budget:
                return
            self._entries[session_id] = (key, memo)
            self._size += memo.size
            while self._size > self._budget:
                self._size -= self._entries.popitem(last=False)[1][1].size

    @property
    def size(self) -> int:
        return self._size
