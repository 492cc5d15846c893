"""Interrupted-turn closers (persistence.md §3.3): what ``inspect`` appends in memory when the
stored valid prefix ends inside an open turn, from a whole prefix (``closers``) or from one that
streams past (``StreamedTurn``).
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from ...model.event import Event, make_event
from ...values import get_path, is_array

NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide from the tool's semantics whether to retry it: retry only "
    "read-only or idempotent operations; when the call may have had side effects, verify the "
    "external state or ask the user first. Never retry blindly."
)

_NONE = object()  # "no open turn/step" (distinct from a JSON null turn)


class _TurnState:
    """The forward scan of §3.3: open turn, open step and pending tool calls."""

    def __init__(self) -> None:
        self.turn: Any = _NONE
        self.step: Any = _NONE
        self.pending: dict[str, dict[str, Any]] = {}  # call id -> {step?, callSeq?}

    def observe(self, event: Event) -> None:
        kind = event.type
        if kind == "turn/start":
            turn = get_path(event.data(), "turn")
            if turn is not UNSET:
                self.turn, self.step, self.pending = turn, _NONE, {}
        elif kind == "turn/end":
            self.turn, self.step, self.pending = _NONE, _NONE, {}
        elif kind == "step/start":
            step = get_path(event.data(), "step")
            if step is not UNSET:
                self.step = step
        elif kind == "step/end":
            self.step, self.pending = _NONE, {}
        elif kind == "assistant/message":
            self._register_calls(event.data())
        elif kind == "tool/call":
            call_id = get_path(event.data(), "callId")
            if isinstance(call_id, str) and call_id in self.pending:
                self.pending[call_id]["callSeq"] = event.seq
        elif kind == "tool/result":
            call_id = get_path(event.data(), "message", "source", "callId")
            if isinstance(call_id, str):
                self.pending.pop(call_id, None)

    def _register_calls(self, data: Any) -> None:
        content = get_path(data, "message", "content")
        if not is_array(content):
            return
        step = get_path(data, "step")
        for block in content:
            if get_path(block, "type") == "tool-call" and isinstance(get_path(block, "id"), str):
                # Assigning to an existing key keeps its position and drops its callSeq.
                self.pending[block["id"]] = {} if step is UNSET else {"step": step}


def _tool_result_closer(
    turn: Any, call_id: str, entry: dict[str, Any], seq: int, time: Any
) -> Event:
    started = "callSeq" in entry
    data: dict[str, Any] = {"turn": turn}
    if "step" in entry:
        data["step"] = entry["step"]
    data["message"] = {
        "id": f"interrupted-tool-result-{call_id}-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "isError": True,
                "content": [
                    {"type": "text", "text": OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT}
                ],
            }
        ],
    }
    data["error"] = (
        {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
        if started
        else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    )
    return make_event(
        "tool/result",
        seq,
        time,
        data,
        surface_op="append",
        source_seqs=[entry["callSeq"]] if started else UNSET,
    )


def _open_turn_start(events: list[Event]) -> int | None:
    """The index of the turn/start that opened a still-open final turn, if any.

    Only the last turn/start or turn/end matters (both reset the scan), so the forward scan can
    begin there instead of decoding every message of the log."""
    for index in range(len(events) - 1, -1, -1):
        kind = events[index].type
        if kind == "turn/end":
            return None
        if kind == "turn/start" and get_path(events[index].data(), "turn") is not UNSET:
            return index
    return None


def closers(events: list[Event]) -> list[Event]:
    """The in-memory closers of §3.3 for a prefix that ends inside an open turn ([] otherwise)."""
    start = _open_turn_start(events)
    if start is None:
        return []
    state = _TurnState()
    for event in events[start:]:
        state.observe(event)
    return closers_after(state, events[-1])


def closers_after(state: _TurnState, last: Event) -> list[Event]:
    """The closers for an open turn in ``state``, numbered after ``last`` (the prefix's end)."""
    seq, time, turn = int(last.seq) + 1, last.time, state.turn
    out: list[Event] = []
    for call_id, entry in state.pending.items():
        out.append(_tool_result_closer(turn, call_id, entry, seq, time))
        seq += 1
    if state.step is not _NONE:
        out.append(make_event("step/end", seq, time, {"turn": turn, "step": state.step}))
        seq += 1
    out.append(make_event("turn/end", seq, time, {"turn": turn, "reason": {"kind": "interrupted"}}))
    return out


# Event types that can change a _TurnState; observe() ignores every other type.
_TURN_STATE_TYPES = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "assistant/message",
        "tool/call",
        "tool/result",
    }
)
# Deferred events folded into the state at a time: bounds memory in a very long open turn.
_FOLD_EVERY = 256


class StreamedTurn:
    """The scan of ``closers`` for a prefix that streams past. Only the last open turn matters
    (a ``turn/start`` with a turn, or a ``turn/end``, resets the state), so events are kept only
    from the last such ``turn/start`` on, and only types the scan reacts to; they are observed in
    batches, so most turns end before any of their messages is decoded (as in ``closers``).
    A failure while observing counts only if its turn is still the open one at the end (only
    then does ``closers`` observe that event), so it is held until then."""

    def __init__(self) -> None:
        self.state: _TurnState | None = None  # None: no open turn
        self.deferred: list[Event] = []
        self.error: Exception | None = None

    def observe(self, event: Event) -> None:
        kind = event.type
        if type(kind) is not str or kind not in _TURN_STATE_TYPES:
            return
        if kind == "turn/end":
            self.state, self.deferred, self.error = None, [], None
        elif kind == "turn/start" and get_path(event.data(), "turn") is not UNSET:
            self.state, self.deferred, self.error = _TurnState(), [event], None
        elif self.state is not None:  # with no open turn, nothing before the next turn/start counts
            self.deferred.append(event)
            if len(self.deferred) >= _FOLD_EVERY:
                self._fold()

    def _fold(self) -> None:
        assert self.state is not None
        deferred, self.deferred = self.deferred, []
        if self.error is not None:
            return
        try:
            for event in deferred:
                self.state.observe(event)
        except Exception as exc:  # noqa: BLE001 - raised by closers() if this turn stays open
            self.error = exc

    def closers(self, last: Event) -> list[Event]:
        if self.state is None:
            return []
        self._fold()
        if self.error is not None:
            raise self.error
        return closers_after(self.state, last)
