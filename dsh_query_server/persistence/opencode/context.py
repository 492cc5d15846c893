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
    """A compaction request that took effect when ``summary`` completed it: the model's context
    became ``order`` (message ids: the request through its first summary, the kept tail from
    the part's ``tail_start_id``, then the messages up to ``summary``), then what follows."""

    request: str
    summary: str
    order: list[str]


@dataclass(frozen=True, slots=True)
class Plan:
    compactions: dict[str, Compaction]  # by the summary that completes it
    prunes: list[tuple[int, list[str]]]  # (time.compacted, tool part ids), by time
    revert: int | None  # index of the first message a pending revert removes
    partial_revert: bool  # the revert would also cut parts of the message before it
    order: list[str]  # the model's next context, as message ids (``native_order``)


def _tail_id(part: Part) -> str | None:
    return nonempty(part.value.get("tail_start_id")) if part.value is not None else None


def _summary_of(messages: list[Message], i: int) -> int | None:
    """The first summary after the request at ``i`` that answers it, finished or not."""
    m = messages[i]
    for j in range(i + 1, len(messages)):
        info = messages[j].info
        if (
            messages[j].role == "assistant"
            and info
            and info.get("summary")
            and (info.get("parentID") == m.id)
        ):
            return j
    return None


def plan(session: Session, messages: list[Message]) -> Plan:
    index = {m.id: i for i, m in enumerate(messages)}
    compactions: dict[str, Compaction] = {}
    for i, m in enumerate(messages):
        part = compaction_part(m)
        if part is None or part.value is None:
            continue
        done = next((j for j in range(i + 1, len(messages)) if completes(messages[j], m)), None)
        if done is None:
            continue
        ids = [x.id for x in messages]
        first = _summary_of(messages, i) or done
        start = _tail_id(part)
        t = index.get(start) if start is not None else None
        if start is not None and (t is None or t > i):
            continue  # a tail OpenCode cannot find: it then keeps the whole history
        tail = ids[t:i] if t is not None else []
        order = ids[i : first + 1] + tail + ids[first + 1 : done + 1]
        compactions[messages[done].id] = Compaction(m.id, messages[done].id, order)
    revert, partial = _revert(session, messages)
    kept = messages if revert is None else messages[:revert]
    return Plan(compactions, _prunes(messages), revert, partial, native_order(kept))


def native_order(messages: list[Message]) -> list[str]:
    """The messages of the model's next context, in its order (message-v2.ts
    ``filterCompacted``): walking back from the newest, a request whose summary completed ends
    the walk, or, with a ``tail_start_id``, the message it names does; the last request with a
    tail in what is kept then goes first with its first summary, before the tail."""
    kept: list[Message] = []
    completed: set[object] = set()
    retain: str | None = None
    for m in reversed(messages):
        kept.append(m)
        if retain is not None:
            if m.id == retain:
                break
            continue
        if m.role == "user" and m.id in completed:
            part = compaction_part(m)
            if part is None:
                continue
            retain = _tail_id(part)
            if retain is None or m.id == retain:
                break
            continue
        info = m.info
        if m.role == "assistant" and info and info.get("summary") and info.get("finish"):
            if error_of(m) is None:
                completed.add(info.get("parentID"))
    kept.reverse()
    ids = [m.id for m in kept]
    c = next(
        (
            i
            for i in range(len(kept) - 1, -1, -1)
            if any(
                p.type == "compaction" and p.value and "tail_start_id" in p.value
                for p in kept[i].parts
            )
            and kept[i].role == "user"
        ),
        None,
    )
    if c is None:
        return ids
    part = next(
        p
        for p in kept[c].parts
        if p.type == "compaction" and p.value and "tail_start_id" in p.value
    )
    s = next(
        (
            j
            for j in range(c + 1, len(kept))
            if kept[j].role == "assistant"
            and (kept[j].info or {}).get("summary")
            and (kept[j].info or {}).get("parentID") == kept[c].id
        ),
        None,
    )
    start = _tail_id(part)
    t = ids.index(start) if start is not None and start in ids else None
    if t is None or s is None or t >= c:
        return ids
    return ids[c : s + 1] + ids[t:c] + ids[s + 1 :]


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
