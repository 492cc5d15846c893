"""What OpenCode's own context rules decide, read off the native records before mapping
(importers.md §8.4): which compactions took effect and what they kept, which tool outputs a prune
cleared and when, and what a pending revert removes. After sst/opencode
packages/opencode/src/session/message-v2.ts (``filterCompacted``, ``toModelMessages``),
compaction.ts (``prune``) and revert.ts (``cleanup``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..importing.values import nonempty, obj
from .rows import Message, Part, Session, ms

ABORTED_ERROR = "MessageAbortedError"


def error_of(message: Message) -> dict[str, object] | None:
    return obj(message.info.get("error")) if message.info is not None else None


def skipped(message: Message) -> bool:
    """An assistant message the model is never sent again: one with an error, unless it was
    aborted after producing more than step starts and reasoning (``toModelMessages``)."""
    error = error_of(message)
    if error is None:
        return False
    if error.get("name") == ABORTED_ERROR:
        return not any(p.type not in ("step-start", "reasoning") for p in message.parts)
    return True


def compaction_part(message: Message) -> Part | None:
    if message.role != "user":
        return None
    return next((p for p in message.parts if p.type == "compaction"), None)


def completes(summary: Message, request: Message) -> bool:
    """A finished, error-free summary answering the compaction request (``filterCompacted``)."""
    info = summary.info
    return (
        info is not None
        and summary.role == "assistant"
        and info.get("summary") is True
        and info.get("parentID") == request.id
        and bool(info.get("finish"))
        and error_of(summary) is None
    )


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction request that took effect: the model's context became the messages
    ``request`` .. ``summary`` (in store order), then ``tail`` (the messages from the part's
    ``tail_start_id`` up to the request), then everything after the summary."""

    request: str
    summary: str
    through: list[str]  # request .. summary
    tail: list[str]


@dataclass(frozen=True, slots=True)
class Plan:
    compactions: dict[str, Compaction]  # by the summary that completes it
    ineffective: list[str]  # requests whose tail_start_id names no earlier message
    prunes: list[tuple[int, list[str]]]  # (time.compacted, tool part ids), by time
    revert: int | None  # index of the first message a pending revert removes
    partial_revert: bool  # the revert would also cut parts of the message before it


def plan(session: Session, messages: list[Message]) -> Plan:
    index = {m.id: i for i, m in enumerate(messages)}
    compactions: dict[str, Compaction] = {}
    ineffective: list[str] = []
    for i, m in enumerate(messages):
        part = compaction_part(m)
        if part is None or part.value is None:
            continue
        done = next((j for j in range(i + 1, len(messages)) if completes(messages[j], m)), None)
        if done is None:
            continue
        tail: list[str] = []
        start = nonempty(part.value.get("tail_start_id"))
        if start is not None and start != m.id:
            t = index.get(start)
            if t is None or t > i:
                ineffective.append(m.id)  # OpenCode then keeps the whole history
                continue
            tail = [x.id for x in messages[t:i]]
        through = [x.id for x in messages[i : done + 1]]
        compactions[messages[done].id] = Compaction(m.id, messages[done].id, through, tail)
    revert, partial = _revert(session, messages)
    return Plan(compactions, ineffective, _prunes(messages), revert, partial)


def _prunes(messages: list[Message]) -> list[tuple[int, list[str]]]:
    """Completed tool parts whose output a prune cleared, grouped by ``time.compacted``."""
    batches: dict[int, list[str]] = {}
    for m in messages:
        for p in m.parts:
            if p.type != "tool" or p.value is None:
                continue
            state = obj(p.value.get("state"))
            if state is None or state.get("status") != "completed":
                continue
            times = obj(state.get("time"))
            when = ms(times.get("compacted")) if times is not None else None
            if when is not None:
                batches.setdefault(when, []).append(p.id)
    return sorted(batches.items())


def _revert(session: Session, messages: list[Message]) -> tuple[int | None, bool]:
    """``cleanup``: the messages from ``revert.messageID`` on go, and with ``partID`` the parts
    from it on of the message kept last."""
    revert = session.revert
    if revert is None:
        return None, False
    target = nonempty(revert.get("messageID"))
    cut = next((i for i, m in enumerate(messages) if m.id == target), None)
    kept = messages if cut is None else messages[:cut]
    part = nonempty(revert.get("partID"))
    partial = part is not None and bool(kept) and any(p.id == part for p in kept[-1].parts)
    return cut, partial
