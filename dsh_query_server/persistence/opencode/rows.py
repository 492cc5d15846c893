"""OpenCode's native records as either store holds them (importers.md §8.1): one session, its
messages in OpenCode's order and each message's parts in id order. A record whose JSON does not
decode to an object is kept as damaged, so one bad row never makes a session unreadable."""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import jsoncodec
from ..importing.emitter import JSONObject
from ..importing.values import MAX_SAFE, nonempty, obj

PREVIEW = 200


@dataclass(frozen=True, slots=True)
class Damage:
    """What is shown of a record that is not a JSON object: its first code points and size."""

    preview: str
    length: int


def decode(text: str | bytes | None) -> tuple[JSONObject | None, Damage | None]:
    """A stored JSON object, or the damage that stands for it."""
    raw = text if text is not None else ""
    try:
        value = jsoncodec.loads(raw)
    except jsoncodec.JSONDecodeError:
        value = None
    d = obj(value)
    if d is not None:
        return d, None
    shown = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
    return None, Damage(shown[:PREVIEW], len(raw))


def ms(value: object) -> int | None:
    """A stored epoch-milliseconds number as a safe integer (OpenCode writes ``Date.now()``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or not -MAX_SAFE <= value <= MAX_SAFE:  # NaN or out of range
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class Part:
    """One part. ``value`` is the part with its id; None when damaged."""

    id: str
    value: JSONObject | None
    damage: Damage | None = None
    size: int = 0
    type: str | None = field(init=False)

    def __post_init__(self) -> None:
        kind = nonempty(self.value.get("type")) if self.value is not None else None
        object.__setattr__(self, "type", kind)


@dataclass(frozen=True, slots=True)
class Message:
    """One message (its ``info``; None when damaged) and its parts. ``role`` and ``time`` (its
    ``time.created``, else the store's creation time) are read from ``info``."""

    id: str
    info: JSONObject | None
    parts: list[Part] = field(default_factory=list[Part])
    damage: Damage | None = None
    size: int = 0
    created: int | None = None  # the store's creation time, which orders messages
    role: str | None = field(init=False)
    time: int | None = field(init=False)

    def __post_init__(self) -> None:
        info = self.info
        t = obj(info.get("time")) if info is not None else None
        created = ms(t.get("created")) if t is not None else None
        object.__setattr__(self, "role", nonempty(info.get("role")) if info else None)
        object.__setattr__(self, "time", created if created is not None else self.created)


@dataclass(frozen=True, slots=True)
class Session:
    """A session's own record. ``record`` is what the store holds (the row's columns, or the
    legacy file), kept for the log; the other fields are read from it."""

    id: str
    created: int
    record: JSONObject
    updated: int | None = None
    directory: str | None = None
    parent: str | None = None
    title: str | None = None
    version: str | None = None
    agent: str | None = None
    revert: JSONObject | None = None


@dataclass(frozen=True, slots=True)
class Native:
    """Everything one session's log is built from."""

    session: Session
    messages: list[Message]
    path: str  # the database, or the legacy session file
