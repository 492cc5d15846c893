"""The surface fold (semantics.md §2): one pass over a log that validates every surface marker and
computes the final surface, the replacements and the class of every seq.

``plan_step`` is the single transition function. It is pure: it checks one event against a fold
state and returns what would change, so both the whole-log ``fold_surface`` and the incremental
``SurfaceManager`` (used by the live store to admit appends) are built from it, and a rejected
candidate never touches the state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from msgspec import UNSET

from ..model.event import SURFACE_TYPES, Event
from ..values import is_array, is_nonneg_safe_integer, is_object, json_number

CURRENT = "current"
SHADOWED = "shadowed"
LOG_ONLY = "log-only"


class FoldError(Exception):
    """The log fails the fold; ``message`` is the spec's fold message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.index: int | None = None  # set by SurfaceManager.admit: the failing batch position


@dataclass(frozen=True, slots=True)
class Replacement:
    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]


@dataclass(slots=True)
class FoldState:
    """The running fold: surface nodes in order, and who shadowed whom."""

    nodes: list[int] = field(default_factory=list[int])
    replacements: list[Replacement] = field(default_factory=list[Replacement])
    shadowed_by: dict[int, int] = field(default_factory=dict[int, int])
    replacement_of: dict[int, Replacement] = field(default_factory=dict[int, Replacement])
    length: int = 0


@dataclass(frozen=True, slots=True)
class Step:
    """What one admitted event changes: nothing (log-only), an append, or a replacement."""

    seq: int
    replacement: Replacement | None = None
    append: bool = False


def render(value: Any) -> str:
    """Insert a value into a message: numbers as JSON numbers, strings verbatim."""
    if value is UNSET:
        return "undefined"
    if type(value) in (int, float):
        return json_number(value)
    if isinstance(value, str):
        return value
    from .. import jsoncodec

    return jsoncodec.dumps(value).decode("utf-8", "replace")


def plan_step(state: FoldState, event: Event, index: int, events: Sequence[Event]) -> Step:
    """Check ``event`` (at log index ``index``) against ``state``; raise FoldError or return the
    change. ``events`` gives access to earlier events (the tool-result rewrite rule needs them)."""
    seq = event.seq
    if not (is_nonneg_safe_integer(seq) and seq == index):
        raise FoldError(f"session event seq {render(seq)} is not contiguous; expected {index}")
    seq = index
    etype = event.type
    op = event.surface_op
    if etype not in SURFACE_TYPES:
        if op is not UNSET:
            raise FoldError(
                f'session event "{render(etype)}" is not surface-eligible and cannot carry surfaceOp'
            )
        if event.source_seqs is not UNSET:
            raise FoldError(
                f'session event "{render(etype)}" is not surface-eligible and cannot carry '
                "sourceEventSeqs"
            )
        return Step(seq)
    if op is UNSET:
        raise FoldError(
            f'session event "{etype}" is surface-eligible and requires a surfaceOp marker'
        )
    if op == "append" and type(op) is str:
        _check_provenance(event, seq, ())
        return Step(seq, append=True)
    if not is_object(op):
        raise FoldError(f'session event "{etype}" carries an invalid surfaceOp')
    if not (
        len(op) == 3
        and op.get("op") == "replace"
        and type(op.get("op")) is str
        and is_nonneg_safe_integer(op.get("start", UNSET))
        and is_nonneg_safe_integer(op.get("end", UNSET))
    ):
        raise FoldError(f'session event "{etype}" carries an invalid replace surfaceOp')
    start, end = int(op["start"]), int(op["end"])
    nodes = state.nodes
    p = _position(nodes, start)
    if p < 0:
        raise FoldError(f"surface replace: start seq {start} not found in surface")
    q = _position(nodes, end)
    if q < 0:
        raise FoldError(f"surface replace: end seq {end} not found in surface")
    if p > q:
        raise FoldError(
            f"surface replace: start seq {start} (index {p}) is after end seq {end} (index {q})"
        )
    shadowed = tuple(nodes[p : q + 1])
    _check_provenance(event, seq, shadowed)
    if etype == "tool/result":
        _check_tool_result_rewrite(event, shadowed, events)
    return Step(seq, replacement=Replacement(seq, start, end, shadowed))


def _position(nodes: list[int], seq: int) -> int:
    try:
        return nodes.index(seq)
    except ValueError:
        return -1


def _check_provenance(event: Event, seq: int, shadowed: tuple[int, ...]) -> None:
    sources = event.source_seqs
    if sources is not UNSET:
        if not is_array(sources):
            raise FoldError(f"sourceEventSeqs on event at seq {seq} must be an array when present")
        if not sources and event.type != "assistant/message":
            raise FoldError("sourceEventSeqs must not be empty except on assistant/message")
        if not all(is_nonneg_safe_integer(s) for s in sources):
            raise FoldError(
                f'session event "{event.type}" sourceEventSeqs must densely contain '
                "non-negative safe integers"
            )
        if len(set(sources)) != len(sources):
            raise FoldError("sourceEventSeqs must not contain duplicates")
        for s in sources:
            if s >= seq:
                raise FoldError(
                    f"sourceEventSeqs must reference earlier events: {json_number(s)} >= "
                    f"current seq {seq}"
                )
    if shadowed:
        cited: set[Any] = set(sources) if sources is not UNSET else set()
        missing = [s for s in shadowed if s not in cited]
        if missing:
            raise FoldError(
                "surface replace: sourceEventSeqs must include every shadowed surface node; "
                f"missing {', '.join(str(s) for s in missing)}"
            )


def _check_tool_result_rewrite(
    event: Event, shadowed: tuple[int, ...], events: Sequence[Event]
) -> None:
    if len(shadowed) != 1:
        raise FoldError("tool/result surface replacement must rewrite exactly one current node")
    target = events[shadowed[0]]
    if target.type != "tool/result":
        raise FoldError("tool/result surface replacement must target a current tool/result")
    if not _json_equal(
        _without_result_content(target.data()), _without_result_content(event.data())
    ):
        raise FoldError("tool/result surface replacement may change only content")


def _without_result_content(data: Any) -> Any:
    # Null message.content[0].content so that only the result block's inner content may differ.
    if is_object(data):
        message = data.get("message")
        if is_object(message):
            content = message.get("content")
            if is_array(content) and content and is_object(content[0]):
                content[0]["content"] = None
    return data


def _json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: bool is never a number, arrays compare by length and element."""
    if is_object(a):
        return is_object(b) and a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if is_array(a):
        return is_array(b) and len(a) == len(b) and all(map(_json_equal, a, b))
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def apply_step(state: FoldState, step: Step) -> None:
    """Commit a planned step. Only called with a step planned against this very state."""
    rep = step.replacement
    if step.append:
        state.nodes.append(step.seq)
    elif rep is not None:
        p = state.nodes.index(rep.shadowed_seqs[0])
        state.nodes[p : p + len(rep.shadowed_seqs)] = [rep.seq]
        state.replacements.append(rep)
        state.replacement_of[rep.seq] = rep
        for s in rep.shadowed_seqs:
            state.shadowed_by[s] = rep.seq
    state.length += 1


def undo_step(state: FoldState, step: Step) -> None:
    """Reverse the latest applied step (batch rollback in the live store)."""
    rep = step.replacement
    if step.append:
        state.nodes.pop()
    elif rep is not None:
        p = state.nodes.index(rep.seq)
        state.nodes[p : p + 1] = list(rep.shadowed_seqs)
        state.replacements.pop()
        del state.replacement_of[rep.seq]
        for s in rep.shadowed_seqs:
            del state.shadowed_by[s]
    state.length -= 1


@dataclass(frozen=True, slots=True)
class Fold:
    """The result of folding a whole log."""

    nodes: list[int]
    replacements: list[Replacement]
    shadowed_by: dict[int, int]
    replacement_of: dict[int, Replacement]
    length: int

    current: frozenset[int]

    def surface(self, seq: int) -> str:
        if seq in self.current:
            return CURRENT
        if seq in self.shadowed_by:
            return SHADOWED
        return LOG_ONLY

    def classes(self) -> list[str]:
        """The class of every seq, in seq order (the same as ``surface`` of each)."""
        out = [LOG_ONLY] * self.length
        for seq in self.shadowed_by:
            out[seq] = SHADOWED
        for seq in self.current:
            out[seq] = CURRENT
        return out


def fold_surface(events: Sequence[Event]) -> Fold:
    """Fold a whole log; raises FoldError at the first failing event."""
    return fold_events(events, events)


def fold_events(events: Iterable[Event], log: Sequence[Event]) -> Fold:
    """Fold a whole log met one event at a time; ``log`` gives any earlier event by seq (the
    tool-result rewrite rule looks one up), so a log read in windows never has to be whole."""
    state = FoldState()
    for index, event in enumerate(events):
        # Most events are plain log-only ones (chunks, steps, ...) that plan_step would accept as
        # Step(seq) and apply_step would only count: take that shortcut without building a Step.
        if (
            type(event.seq) is int
            and event.seq == index
            and type(event.type) is str
            and event.type not in SURFACE_TYPES
            and event.surface_op is UNSET
            and event.source_seqs is UNSET
        ):
            state.length += 1
            continue
        apply_step(state, plan_step(state, event, index, log))
    return Fold(
        state.nodes,
        state.replacements,
        state.shadowed_by,
        state.replacement_of,
        state.length,
        frozenset(state.nodes),
    )


def freeze(state: FoldState) -> Fold:
    """A Fold view of an incremental state (copies, so later appends do not show through)."""
    return Fold(
        list(state.nodes),
        list(state.replacements),
        dict(state.shadowed_by),
        dict(state.replacement_of),
        state.length,
        frozenset(state.nodes),
    )


class SurfaceManager:
    """Incremental fold for an append-only log, built from the same transitions as fold_surface.

    ``admit`` checks a batch against the current state and commits it only when every event
    passes, so a failed append changes nothing."""

    def __init__(self) -> None:
        self.state = FoldState()

    def admit(self, batch: Sequence[Event], log: Sequence[Event]) -> None:
        """``log`` is the current log; the batch is checked as if appended to it. On FoldError the
        exception carries ``index``, the position in the batch that failed."""
        applied: list[Step] = []
        view = Concat(log, batch)
        base = len(log)
        try:
            for i, event in enumerate(batch):
                step = plan_step(self.state, event, base + i, view)
                apply_step(self.state, step)
                applied.append(step)
        except FoldError as exc:
            for step in reversed(applied):
                undo_step(self.state, step)
            exc.index = len(applied)
            raise

    def fold(self) -> Fold:
        return freeze(self.state)


class Concat(Sequence[Event]):
    """Read-only view of log + batch without copying the log."""

    def __init__(self, head: Sequence[Event], tail: Sequence[Event]) -> None:
        self.head, self.tail = head, tail

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Event]: ...

    def __getitem__(self, i: int | slice) -> Event | Sequence[Event]:
        if isinstance(i, slice):
            raise TypeError("Concat is read one event at a time")
        n = len(self.head)
        return self.head[i] if i < n else self.tail[i - n]
