"""Legacy shape normalization (persistence.md §3.4): the rewrites that turn pre-react-loop
event shapes into current ones, in log order, shared by both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any

import msgspec
from msgspec import UNSET

from ... import jsoncodec
from ...model.event import Event
from ...values import (
    get_path,
    is_nonneg_safe_integer,
    is_number,
    is_object,
    is_safe_integer,
    json_number,
)
from ..contract.errors import SessionPersistenceCorruptionError
from .records import ChunkOutline


def _corrupt(session_id: str, what: str, seq: Any) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(
        f'session "{session_id}" contains malformed pre-react-loop {what} at seq {render_json(seq)}'
    )


def render_json(value: Any) -> str:
    """A value as message text: numbers as JSON numbers (3.0 is 3), others as compact JSON."""
    return json_number(value) if is_number(value) else jsoncodec.dumps(value).decode()


def _is_turn_number(value: Any) -> bool:
    return is_safe_integer(value) and value >= 1


def _legacy_turn_start(data: Any) -> dict[str, Any] | None:
    """Rewrite 1: the new data, or None when the legacy shape is malformed."""
    trigger = data["trigger"]
    if (
        _is_turn_number(data.get("turn"))
        and data.keys() == {"turn", "trigger"}
        and is_object(trigger)
        and isinstance(trigger.get("kind"), str)
        and trigger["kind"]
    ):
        return {"turn": data["turn"]}
    return None


def _is_legacy_reason(reason: Any) -> bool:
    """Rewrite 2 applies only to these three legacy reason forms."""
    if not is_object(reason):
        return False
    kind = reason.get("kind")
    return (
        kind == "disposed"
        or (kind == "aborted" and "reason" not in reason)
        or (kind == "error" and "error" not in reason)
    )


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


_FAILURE_OPTIONAL: dict[str, Callable[[Any], bool]] = {
    "status": is_number,
    "providerRetryAfterMs": is_number,
    "requestId": _is_str,
}


def _is_failure(failure: Any) -> bool:
    return (
        is_object(failure)
        and isinstance(failure.get("message"), str)
        and isinstance(failure.get("code"), str)
        and failure.keys() <= {"message", "code", *_FAILURE_OPTIONAL}
        and all(check(failure[k]) for k, check in _FAILURE_OPTIONAL.items() if k in failure)
    )


def _legacy_reason(reason: dict[str, Any]) -> dict[str, Any] | None:
    """The current-form reason for a legacy one, or None when it is malformed."""
    kind, keys = reason["kind"], reason.keys()
    if kind in ("disposed", "aborted"):
        if keys != {"kind"}:
            return None
        inner = "disposed" if kind == "disposed" else "legacy"
        return {"kind": "aborted", "reason": {"kind": inner}}
    if not is_nonneg_safe_integer(reason.get("step")):
        return None
    if keys == {"kind", "step", "failure"} and _is_failure(reason["failure"]):
        return {"kind": "error", "error": reason["failure"]}
    if (
        keys in ({"kind", "step", "message"}, {"kind", "step", "message", "code"})
        and isinstance(reason["message"], str)
        and isinstance(reason.get("code", ""), str)
    ):
        return {
            "kind": "error",
            "error": {"message": reason["message"], "code": reason.get("code", "UNKNOWN")},
        }
    return None


def _legacy_turn_end(data: dict[str, Any]) -> dict[str, Any] | None:
    """Rewrite 2: the new data, or None when the legacy shape is malformed."""
    if not _is_turn_number(data.get("turn")) or data.keys() != {"turn", "reason"}:
        return None
    reason = _legacy_reason(data["reason"])
    return None if reason is None else {**data, "reason": reason}


def _steering_data(session_id: str, seq: Any, data: Any) -> dict[str, Any] | None:
    """Rewrite 3: the user/message data for a steering/message, or None when malformed."""
    if not is_object(data) or not is_safe_integer(data.get("turn")):
        return None
    if data.keys() == {"turn", "message"} and is_object(data["message"]):
        return data["message"]
    if data.keys() == {"turn", "content", "source"}:
        return {
            "content": data["content"],
            "source": data["source"],
            "id": _legacy_id(session_id, seq),
            "role": "user",
        }
    return None


def _legacy_id(session_id: str, seq: Any) -> str:
    return f"legacy-message:{session_id}:{render_json(seq)}"


def _message_id(event: Event) -> Any:
    """The message id an event records for later replace lookups (UNSET when none)."""
    if isinstance(event, ChunkOutline):
        return UNSET  # a packed chunk's data keys are exactly turn, step and chunk
    data = event.data()
    found = (
        get_path(data, "id") if event.type == "user/message" else get_path(data, "message", "id")
    )
    return found if isinstance(found, str) else UNSET


class StaleShape(Exception):
    """A window read met stored data that its verified LogShape does not describe: the log
    changed without its revision changing. The backend then verifies the whole log again."""


class NeedsHistory(Exception):
    """A streamed verification (StreamedLog) met a legacy replace lookup, which needs the events
    before it: the caller verifies with the whole log instead."""


# Rewrite 4 applies only when these predicates hold on the data's top-level keys.
_IDENTITY_REWRITE: dict[str, Callable[[Set[str]], bool]] = {
    "user/message": lambda keys: (
        not keys & {"id", "role", "message"} and {"content", "source"} <= keys
    ),
    "assistant/message": lambda keys: "message" not in keys and {"content", "provenance"} <= keys,
    "tool/result": lambda keys: "message" not in keys and {"callId", "content", "isError"} <= keys,
}
_KEYS_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _data_keys(event: Event) -> Set[str] | None:
    """The top-level keys of ``data`` without decoding the values (an empty set when ``data`` is
    not an object); None when only the full decoder can tell (absent data, surrogates, …)."""
    try:
        return _KEYS_DECODER.decode(event.data_json).keys()
    except msgspec.ValidationError:
        return frozenset()
    except msgspec.DecodeError:
        return None


class Normalizer:
    """Rewrites one log's legacy shapes in order, remembering events by seq for rewrite 4.

    ``resolved`` collects, per legacy tool/result whose replace looks up an earlier message id,
    the id found (UNSET for none), so a window can later be normalized without the events before
    it. Built with ``known`` (such a map from an earlier full pass) it normalizes a window."""

    def __init__(
        self, session_id: str, known: dict[Any, Any] | None = None, streaming: bool = False
    ) -> None:
        self.session_id = session_id
        self.known = known
        # Streaming (StreamedLog): earlier events are not kept, so a replace lookup cannot be
        # answered; it raises NeedsHistory instead.
        self.streaming = streaming
        self.resolved: dict[Any, Any] = {}
        self.out: list[Event] = []
        # Rewritten events by seq, built at the first replace lookup (legacy logs only) and kept
        # up to date from then on; message ids are read lazily too: few events need them.
        self.by_seq: dict[Any, Event] | None = None

    def rewrite(self, event: Event) -> Event:
        kind = event.type
        if kind not in LEGACY_TYPES:
            return event
        if kind in _IDENTITY_REWRITE:
            # Messages are large and nearly always current-form: look at the keys first.
            keys = _data_keys(event)
            if keys is not None and not _IDENTITY_REWRITE[kind](keys):
                return event
        data = event.data()
        if not is_object(data) and kind != "steering/message":
            return event
        new_kind, new_data = kind, data
        if kind == "turn/start" and "trigger" in data:
            new_data = _legacy_turn_start(data)
            if new_data is None:
                raise _corrupt(self.session_id, "turn/start", event.seq)
        elif kind == "turn/end" and _is_legacy_reason(data.get("reason")):
            new_data = _legacy_turn_end(data)
            if new_data is None:
                raise _corrupt(self.session_id, "turn/end", event.seq)
        elif kind == "steering/message":
            new_kind, new_data = "user/message", _steering_data(self.session_id, event.seq, data)
            if new_data is None:
                raise _corrupt(self.session_id, "steering/message", event.seq)
        new_data = self._add_identity(new_kind, event, new_data)
        if new_kind == kind and new_data is data:
            return event
        return _with(event, new_kind, new_data)

    def _add_identity(self, kind: str, event: Event, data: dict[str, Any]) -> dict[str, Any]:
        """Rewrite 4: give a legacy message its id/role/message wrapper."""
        sid = self.session_id
        if kind == "user/message":
            if not data.keys() & {"id", "role", "message"} and {"content", "source"} <= data.keys():
                return {**data, "id": _legacy_id(sid, event.seq), "role": "user"}
        elif kind == "assistant/message":
            if "message" not in data and {"content", "provenance"} <= data.keys():
                provenance = data["provenance"]
                source = {**(provenance if is_object(provenance) else {}), "kind": "model"}
                rest = {k: v for k, v in data.items() if k not in ("content", "provenance")}
                return {
                    **rest,
                    "message": {
                        "id": _legacy_id(sid, event.seq),
                        "role": "assistant",
                        "content": data["content"],
                        "source": source,
                    },
                }
        elif kind == "tool/result":
            if "message" not in data and {"callId", "content", "isError"} <= data.keys():
                return self._tool_result_data(event, data)
        return data

    def _replaced_id(self, event: Event, start: Any) -> Any:
        """The message id recorded for seq ``start`` (UNSET when none)."""
        if self.known is not None:
            if event.seq not in self.known:
                raise StaleShape(f"no verified message id for the replace at seq {event.seq}")
            return self.known[event.seq]
        if self.by_seq is None:
            if self.streaming:
                raise NeedsHistory(f"a replace at seq {event.seq} looks up an earlier event")
            self.by_seq = {e.seq: e for e in self.out}
        replaced = self.by_seq.get(start)
        message_id = UNSET if replaced is None else _message_id(replaced)
        self.resolved[event.seq] = message_id
        return message_id

    def _tool_result_data(self, event: Event, data: dict[str, Any]) -> dict[str, Any]:
        call_id = data["callId"]
        message: dict[str, Any] = {}
        op = event.surface_op
        if is_object(op) and op.get("op") == "replace" and is_number(op.get("start")):
            message_id = self._replaced_id(event, op["start"])
            if message_id is not UNSET:
                message["id"] = message_id
        else:
            message["id"] = _legacy_id(self.session_id, event.seq)
        message["role"] = "user"
        message["content"] = [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": data["content"],
                "isError": data["isError"],
            }
        ]
        message["source"] = {"kind": "tool", "callId": call_id}
        rest = {k: v for k, v in data.items() if k not in ("callId", "content", "isError")}
        return {**rest, "message": message}

    def run(self, events: list[Event]) -> list[Event]:
        out = self.out
        legacy = LEGACY_TYPES
        for event in events:
            if event.type in legacy:
                event = self.rewrite(event)
            if self.by_seq is not None:
                self.by_seq[event.seq] = event
            out.append(event)
        return out


LEGACY_TYPES = frozenset(
    {
        "turn/start",
        "turn/end",
        "steering/message",
        "user/message",
        "assistant/message",
        "tool/result",
    }
)


def _with(event: Event, kind: str, data: Any) -> Event:
    """``event`` with a new type and data; every other key keeps its value and position."""
    value = event.to_value()
    value["type"] = kind
    value["data"] = data
    return Event.from_value(value)


def normalize_legacy(session_id: str, events: list[Event]) -> list[Event]:
    """§3.4 legacy shape rewrites, in log order. Raises SessionPersistenceCorruptionError."""
    return Normalizer(session_id).run(events)
