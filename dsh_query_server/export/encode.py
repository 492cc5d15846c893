"""A logical log as the lines of an exported ``session.jsonl`` (tools.md §2.2), and the
archive's name for a session id."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from msgspec import UNSET

from .. import jsoncodec
from ..model.event import HEADER_FIELDS, Event, Header
from ..persistence.logical.records import PackedRow, pack

_EVENT_KEYS = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")


def header_line(header: Header) -> bytes:
    value: dict[str, Any] = {"type": "session"}
    for name in HEADER_FIELDS:
        field = header.depth_or_zero if name == "delegationDepth" else header.get(name)
        if field is not UNSET:
            value[name] = field
    return _dumps(value) + b"\n"


def _integral(value: Any) -> Any:
    """Integral floats written without a fraction, iteratively (payloads nest deeply)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [value]
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        items: Iterator[tuple[Any, Any]] = iter(
            node.items() if isinstance(node, dict) else enumerate(node)
        )
        for key, child in list(items):
            if isinstance(child, float) and child.is_integer():
                node[key] = int(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return root[0]


def _dumps(value: Any) -> bytes:
    return jsoncodec.dumps(_integral(value))


def event_line(event: Event) -> bytes:
    value = event.to_value()
    ordered = {k: value[k] for k in _EVENT_KEYS if k in value}
    ordered.update((k, v) for k, v in value.items() if k not in ordered)
    return _dumps(ordered) + b"\n"


def encode_log(header: Header, events: Sequence[Event]) -> bytes:
    """The whole log as one first-materialization batch with packChunks=true."""
    parts = [header_line(header)]
    for record in pack(list(events)):
        if isinstance(record, PackedRow):
            parts.append(
                _dumps(
                    {
                        "type": record.tag,
                        "seq0": record.seq0,
                        "time0": record.time0,
                        "data": record.data,
                    }
                )
                + b"\n"
            )
        else:
            parts.append(event_line(record))
    return b"".join(parts)


def segment(session_id: str) -> str:
    """Every UTF-16 code unit outside [A-Za-z0-9_-] becomes ``_``."""
    out: list[str] = []
    for ch in session_id:
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.append("__" if ord(ch) > 0xFFFF else "_")
    return "".join(out)
