"""Session events and headers as immutable JSON objects (semantics.md §1.2–§1.3).

An event keeps the exact JSON bytes it was read or built from (``raw``) and the envelope fields the
fold needs. ``data`` stays raw JSON until someone must look inside it (validation, text
extraction), so reading a log and sending it back to a client never re-encodes payloads. Both
classes are immutable: handing one to a caller is handing it a detached value.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, cast

import msgspec
from msgspec import UNSET, UnsetType

from .. import jsoncodec
from ..values import is_nonneg_safe_integer

SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
ENVELOPE_KEYS = frozenset(
    {"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"}
)


class _Envelope(msgspec.Struct, gc=False):
    type: Any = UNSET
    seq: Any = UNSET
    time: Any = UNSET
    data: msgspec.Raw | UnsetType = UNSET
    surfaceOp: Any = UNSET
    sourceEventSeqs: Any = UNSET
    ignorable: Any = UNSET


def _envelope_fallback(raw: bytes) -> _Envelope:
    # Lone surrogates or huge numbers: parse with the stdlib, keep ``data`` as JSON text.
    try:
        value = jsoncodec.loads(raw)
    except jsoncodec.JSONDecodeError as exc:
        raise ValueError(f"not a JSON event object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("not a JSON event object")
    obj = cast(dict[str, Any], value)
    env = _Envelope(**{k: v for k, v in obj.items() if k in ENVELOPE_KEYS and k != "data"})
    if "data" in obj:
        env.data = msgspec.Raw(jsoncodec.dumps(obj["data"]))
    return env


class Event:
    """One log entry. Absent envelope keys are ``msgspec.UNSET``."""

    __slots__ = ("raw", "type", "seq", "time", "_data", "surface_op", "source_seqs", "ignorable")

    raw: bytes
    type: Any
    seq: Any
    time: Any
    surface_op: Any
    source_seqs: Any
    ignorable: Any
    # The payload: its JSON, or (assembled events) its start in ``raw`` (or its slice of
    # ``raw``, when keys follow it), or UNSET when absent.
    _data: msgspec.Raw | int | slice | UnsetType

    def __init__(self, raw: bytes, env: _Envelope) -> None:
        self.raw = raw
        # A log holds few distinct types; one shared string each keeps long live logs smaller.
        self.type = sys.intern(env.type) if type(env.type) is str else env.type
        self.seq = env.seq
        self.time = env.time
        self._data = env.data
        self.surface_op = env.surfaceOp
        self.source_seqs = env.sourceEventSeqs
        self.ignorable = env.ignorable

    @classmethod
    def from_json(cls, raw: bytes) -> Event:
        """Build from the JSON text of one object; raises ValueError for anything else."""
        raw = bytes(raw)
        try:
            env = msgspec.json.decode(raw, type=_Envelope)
        except msgspec.ValidationError as exc:
            raise ValueError(f"not a JSON event object: {exc}") from None
        except msgspec.DecodeError:
            env = _envelope_fallback(raw)
        return cls(raw, env)

    @classmethod
    def assemble(cls, raw: bytes, type: str, seq: int, time: int, data_json: bytes) -> Event:
        """Build from parts the caller already encoded (``raw`` must be exactly the object
        ``{type, seq, time, data}``, data last); skips re-parsing for storage rows decoded in
        bulk. Only where ``data`` starts in ``raw`` is kept: a second copy of the payload would
        nearly double what a loaded log holds."""
        event = cls.__new__(cls)
        event.raw = raw
        event.type = sys.intern(type)
        event.seq = seq
        event.time = time
        event._data = len(raw) - len(data_json) - 1  # raw ends with data_json + "}"
        event.surface_op = event.source_seqs = event.ignorable = UNSET
        return event

    @classmethod
    def assemble_surface(
        cls, raw: bytes, type: str, seq: int, time: int, data: slice, op: Any, sources: Any
    ) -> Event:
        """``assemble`` of an object with keys after ``data`` (``raw[data]``): a surface event's
        ``surfaceOp`` (``op``) and ``sourceEventSeqs`` (``sources``, UNSET when absent), the
        values its JSON encodes (the caller's, not shared with anyone)."""
        # Spelled out as in ``assemble``, not shared through a helper: one call per event of a
        # bulk read.
        event = cls.__new__(cls)
        event.raw = raw
        event.type = sys.intern(type)
        event.seq = seq
        event.time = time
        event._data = data
        event.surface_op = op
        event.source_seqs = sources
        event.ignorable = UNSET
        return event

    @classmethod
    def assemble_chunks(
        cls, seq0: int, times: list[int], head: bytes, payloads: Iterable[bytes]
    ) -> list[Event]:
        """The members of one packed row in one pass: ``assemble`` of
        ``{"type":"assistant/chunk","seq":seq0+k,"time":times[k],"data":head+payloads[k]+"}}"}``
        (``head`` is the data object up to its payload, ``payloads`` the encoded payloads)."""
        new, kind, unset = cls.__new__, sys.intern("assistant/chunk"), UNSET
        tail = len(head) + 3  # head + payload + "}}" + the closing "}"
        events: list[Event] = []
        append = events.append
        for seq, time, payload in zip(range(seq0, seq0 + len(times)), times, payloads, strict=True):
            raw = b'{"type":"assistant/chunk","seq":%d,"time":%d,"data":%b%b}}}' % (
                seq,
                time,
                head,
                payload,
            )
            event = new(cls)
            event.raw = raw
            event.type = kind
            event.seq = seq
            event.time = time
            event._data = len(raw) - len(payload) - tail
            event.surface_op = event.source_seqs = event.ignorable = unset
            append(event)
        return events

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> Event:
        """Build from a JSON object held as Python values (the object is not retained)."""
        return cls.from_json(jsoncodec.dumps(value))

    @property
    def has_data(self) -> bool:
        return self._data is not UNSET

    @property
    def data_json(self) -> bytes:
        data = self._data
        if type(data) is int:  # assembled: the payload's start in raw
            return self.raw[data:-1]
        if type(data) is slice:  # assembled with keys after the payload
            return self.raw[data]
        return bytes(data) if data is not UNSET else b""

    def data(self) -> Any:
        """A fresh decoded copy of ``data`` (``None`` when absent; check ``has_data``)."""
        if self._data is UNSET:
            return None
        return jsoncodec.loads(self.data_json)

    def to_value(self) -> dict[str, Any]:
        """A fresh decoded copy of the whole object, unknown keys included."""
        return jsoncodec.loads(self.raw)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.to_value() == other.to_value()

    __hash__ = None  # pyright: ignore[reportAssignmentType] - mutable-equality objects are unhashable

    def __repr__(self) -> str:
        return f"Event({self.raw[:120]!r})"


def make_event(
    type: str,
    seq: int,
    time: int,
    data: Any,
    *,
    surface_op: Any = UNSET,
    source_seqs: Any = UNSET,
    ignorable: Any = UNSET,
) -> Event:
    """Build an event in the canonical key order (type, seq, time, data, surfaceOp, sources)."""
    value: dict[str, Any] = {"type": type, "seq": seq, "time": time, "data": data}
    if surface_op is not UNSET:
        value["surfaceOp"] = surface_op
    if source_seqs is not UNSET:
        value["sourceEventSeqs"] = source_seqs
    if ignorable is not UNSET:
        value["ignorable"] = ignorable
    return Event.from_value(value)


class _HeaderFields(msgspec.Struct, gc=False):
    version: Any = UNSET
    id: Any = UNSET
    createdAt: Any = UNSET
    cwd: Any = UNSET
    parentSession: Any = UNSET
    seedLength: Any = UNSET
    origin: Any = UNSET
    delegationDepth: Any = UNSET
    agentPreset: Any = UNSET


HEADER_FIELDS = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
)


class Header:
    """A session header (a JSON object). Unknown keys survive in ``raw``."""

    __slots__ = (
        "raw",
        "version",
        "id",
        "created_at",
        "cwd",
        "parent_session",
        "seed_length",
        "origin",
        "delegation_depth",
        "agent_preset",
    )

    def __init__(self, raw: bytes, f: _HeaderFields) -> None:
        self.raw = raw
        self.version = f.version
        self.id = f.id
        self.created_at = f.createdAt
        self.cwd = f.cwd
        self.parent_session = f.parentSession
        self.seed_length = f.seedLength
        self.origin = f.origin
        self.delegation_depth = f.delegationDepth
        self.agent_preset = f.agentPreset

    @classmethod
    def from_json(cls, raw: bytes) -> Header:
        raw = bytes(raw)
        try:
            fields = jsoncodec.decode(raw, _HeaderFields)
        except (msgspec.ValidationError, jsoncodec.JSONDecodeError) as exc:
            raise ValueError(f"not a JSON header object: {exc}") from None
        return cls(raw, fields)

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> Header:
        return cls.from_json(jsoncodec.dumps(value))

    @classmethod
    def build(cls, **fields: Any) -> Header:
        """From wire-named fields in canonical order; UNSET or missing fields are left out."""
        value = {k: fields[k] for k in HEADER_FIELDS if fields.get(k, UNSET) is not UNSET}
        return cls.from_value(value)

    def to_value(self) -> dict[str, Any]:
        return jsoncodec.loads(self.raw)

    def get(self, wire_name: str) -> Any:
        return getattr(self, _ATTR[wire_name])

    @property
    def depth_or_zero(self) -> Any:
        return 0 if self.delegation_depth is UNSET else self.delegation_depth

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Header) and self.to_value() == other.to_value()

    __hash__ = None  # pyright: ignore[reportAssignmentType] - mutable-equality objects are unhashable

    def __repr__(self) -> str:
        return f"Header({self.raw[:160]!r})"


_ATTR = {
    "version": "version",
    "id": "id",
    "createdAt": "created_at",
    "cwd": "cwd",
    "parentSession": "parent_session",
    "seedLength": "seed_length",
    "origin": "origin",
    "delegationDepth": "delegation_depth",
    "agentPreset": "agent_preset",
}


def _same(a: Any, b: Any) -> bool:
    # JSON equality: absent differs from any value, bool never equals a number.
    if a is UNSET or b is UNSET:
        return a is b
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return a == b


def headers_compatible(a: Header, b: Header, *, include_preset: bool = False) -> bool:
    """semantics.md §1.2: equal version, id, createdAt, cwd, parentSession, seedLength and
    delegationDepth (absent = 0). ``include_preset`` adds agentPreset (the search retry check)."""
    return (
        _same(a.version, b.version)
        and _same(a.id, b.id)
        and _same(a.created_at, b.created_at)
        and _same(a.cwd, b.cwd)
        and _same(a.parent_session, b.parent_session)
        and _same(a.seed_length, b.seed_length)
        and _same(a.depth_or_zero, b.depth_or_zero)
        and (not include_preset or _same(a.agent_preset, b.agent_preset))
    )


def is_valid_seq_at(value: Any, index: int) -> bool:
    """True when a seq value is the (integral, non-bool) number ``index``."""
    return is_nonneg_safe_integer(value) and value == index
