"""Which model responses of a session count, and what each recorded (usage.md §2).

A response counts once, in the session that made it: the recorded usage of views.md §2 (one per
API response: Claude Code's records of one response carry it on the last; Codex's steps take
their own ``last_token_usage``), minus what the session's seed copied from its parent (the
parent counted those). Sub-agents are sessions of their own, so each counts in its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from ..model.event import Event, Header
from ..model.timeline import RecordedUsage
from ..values import is_nonneg_safe_integer
from .usage import StepData, rule_for

END_SEED = "session/end-seed"


@dataclass(frozen=True, slots=True)
class Response:
    """One counted response: the ``assistant/message`` at ``seq`` and what it recorded."""

    seq: int
    time: Any
    model: str | None
    provider: str | None
    recorded: RecordedUsage

    @property
    def uncached(self) -> int | None:
        """The prompt minus its cache reads and writes (usage.md §2.4): one meaning of input
        for every agent, whichever way its provider counted ``input``."""
        usage = self.recorded
        if usage.context is None:
            return None
        plain = usage.context - (usage.cacheRead or 0) - (usage.cacheWrite or 0)
        return plain if plain >= 0 else None


@dataclass(frozen=True, slots=True)
class Counted:
    responses: list[Response]
    seed_responses: int  # recorded in the seed: the parent's, not counted here


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def agent_of(header: Header) -> str:
    """The header's ``source.agent`` (importers.md §0.8); ``dsh`` for a header without one."""
    source = header.to_value().get("source", UNSET)
    if source is UNSET:
        return "dsh"
    agent = _get(source, "agent")
    return agent if isinstance(agent, str) else "unknown"


def _copied_claude(header: Header, events: Sequence[Event]) -> bool:
    """importers.md §1.2: a copied trunk (``lineage: "fork"``) is seed up to its boundary."""
    return _get(header.to_value().get("source"), "lineage") == "fork"


def _copied_codex(header: Header, events: Sequence[Event]) -> bool:
    """importers.md §2.4: a fork whose second record replays its parent's ``session_meta``."""
    if len(events) < 2 or events[1].type != "codex/session_meta":
        return False
    meta = _get(_get(events[1].data(), "record"), "payload")
    return _get(meta, "id") not in (None, header.id)


# Importers whose copied history can lack a boundary record (no own history yet): then the whole
# log is seed (importers.md §0.6: the end-seed comes at the first record of the own history).
SEEDED_WITHOUT_BOUNDARY: dict[str, Callable[[Header, Sequence[Event]], bool]] = {
    "claude-code": _copied_claude,
    "codex": _copied_codex,
}


def own_history_start(header: Header, events: Sequence[Event]) -> int:
    """The first seq of the session's own history: after its ``session/end-seed``, else after a
    dsh header's ``seedLength``, else 0, or the log's end for a copy whose own history has not
    begun."""
    for seq, event in enumerate(events):
        if event.type == END_SEED:
            return seq + 1
    seed_length: Any = header.to_value().get("seedLength")
    if is_nonneg_safe_integer(seed_length):
        return min(int(seed_length), len(events))
    copied = SEEDED_WITHOUT_BOUNDARY.get(agent_of(header))
    return len(events) if copied is not None and copied(header, events) else 0


def _source(data: Any) -> Any:
    return _get(_get(data, "message"), "source")


def count(header: Header, events: Sequence[Event]) -> Counted:
    """The responses of one log that count for it, in seq order."""
    steps = [
        StepData(seq, event, event.data())
        for seq, event in enumerate(events)
        if event.type == "assistant/message"
    ]
    recorded = rule_for(header)(events, steps)
    start = own_history_start(header, events)
    out: list[Response] = []
    seeded = 0
    for step, usage in zip(steps, recorded, strict=True):
        if usage is None:
            continue
        if step.seq < start:
            seeded += 1
            continue
        source = _source(step.data)
        model, provider = _get(source, "model"), _get(source, "provider")
        out.append(
            Response(
                seq=step.seq,
                time=step.event.time,
                model=model if isinstance(model, str) else None,
                provider=provider if isinstance(provider, str) else None,
                recorded=usage,
            )
        )
    return Counted(out, seeded)
