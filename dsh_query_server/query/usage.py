"""The usage each agent recorded for a model response, normalised (views.md §2 ``recorded``).

One rule per agent, chosen by the header's ``source.agent`` (importers.md §0.8); a dsh header has
no ``source`` and gets dsh's rule. A rule sees the whole log and the steps (one per
``assistant/message``, in seq order) and answers one ``RecordedUsage`` or ``None`` per step, so a
rule may look at events other than the step's own (Codex's ``token_count``) or at several steps at
once (Claude Code's duplicate records). A new importer adds its rule to ``RULES`` and states it in
docs/importers.md beside its mapping; an agent without a rule records nothing (every step null).

Only non-negative safe integers count as recorded numbers; anything else is null, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from ..model.event import Event, Header
from ..model.timeline import RecordedUsage
from ..values import is_nonneg_safe_integer


@dataclass(frozen=True, slots=True)
class StepData:
    """One step as the rules see it: the ``assistant/message`` event and its decoded data."""

    seq: int
    event: Event
    data: Any


UsageRule = Callable[[Sequence[Event], Sequence[StepData]], list[RecordedUsage | None]]


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _count(value: Any) -> int | None:
    return int(value) if is_nonneg_safe_integer(value) else None


def _prompt(input: int | None, cache_read: int | None, cache_write: int | None) -> int | None:
    """The whole prompt when input excludes cache reads and writes; absent cache fields add 0."""
    if input is None:
        return None
    return input + (cache_read or 0) + (cache_write or 0)


# -- dsh (views.md §2: dsh's TokenUsage, disjoint counts) ------------------------------------------


def dsh_recorded(usage: Any) -> RecordedUsage | None:
    """dsh's ``TokenUsage`` {inputTokens, outputTokens, cacheReadTokens?, cacheWriteTokens?,
    reasoningTokens?}: inputTokens is uncached input only, reasoning is inside outputTokens."""
    if not isinstance(usage, dict):
        return None
    input = _count(usage.get("inputTokens"))
    read = _count(usage.get("cacheReadTokens"))
    write = _count(usage.get("cacheWriteTokens"))
    return RecordedUsage(
        input=input,
        cacheRead=read,
        cacheWrite=write,
        output=_count(usage.get("outputTokens")),
        reasoning=_count(usage.get("reasoningTokens")),
        context=_prompt(input, read, write),
    )


def dsh_rule(events: Sequence[Event], steps: Sequence[StepData]) -> list[RecordedUsage | None]:
    """Each ``assistant/message`` carries its own ``usage``."""
    return [dsh_recorded(_get(step.data, "usage")) for step in steps]


# -- Claude Code (Anthropic's Messages API usage) -------------------------------------------------


def anthropic_recorded(usage: Any) -> RecordedUsage | None:
    """Anthropic ``usage``: ``input_tokens`` excludes ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens``; reasoning is not counted apart from ``output_tokens``."""
    if not isinstance(usage, dict):
        return None
    input = _count(usage.get("input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    write = _count(usage.get("cache_creation_input_tokens"))
    return RecordedUsage(
        input=input,
        cacheRead=read,
        cacheWrite=write,
        output=_count(usage.get("output_tokens")),
        reasoning=None,
        context=_prompt(input, read, write),
    )


def claude_rule(events: Sequence[Event], steps: Sequence[StepData]) -> list[RecordedUsage | None]:
    """Claude Code writes one transcript record per content block of a response, each imported as
    an ``assistant/message`` of the same importer step (importers.md §1.3: a step is one API
    response). Only the last record of a response carries ``recorded``. A preserved message
    re-appended after a compaction (a copy, importers.md §1.4: it cites its original in
    ``sourceEventSeqs``) is no response of its own."""
    out: list[RecordedUsage | None] = [None] * len(steps)
    last: dict[object, int] = {}
    for i, step in enumerate(steps):
        if step.event.source_seqs is not UNSET:
            continue
        turn, number = _get(step.data, "turn"), _get(step.data, "step")
        key: object = (
            (int(turn), int(number))
            if is_nonneg_safe_integer(turn) and is_nonneg_safe_integer(number)
            else step.seq  # no importer step: a response of its own
        )
        last[key] = i
    for i in last.values():
        out[i] = anthropic_recorded(_get(steps[i].data, "usage"))
    return out


# -- Codex (OpenAI Responses API usage in token_count event messages) -----------------------------

CODEX_TOKEN_COUNT = "codex/event/token_count"  # importers.md §2.3: an opaque event message


def openai_recorded(usage: Any) -> RecordedUsage | None:
    """OpenAI usage as Codex records it: ``input_tokens`` includes ``cached_input_tokens``;
    ``reasoning_output_tokens`` is part of ``output_tokens``; cache writes are not reported."""
    if not isinstance(usage, dict):
        return None
    input = _count(usage.get("input_tokens"))
    return RecordedUsage(
        input=input,
        cacheRead=_count(usage.get("cached_input_tokens")),
        cacheWrite=None,
        output=_count(usage.get("output_tokens")),
        reasoning=_count(usage.get("reasoning_output_tokens")),
        context=input,
    )


def _usage_info(event: Event) -> Any:
    return _get(_get(_get(event.data(), "record"), "payload"), "info")


def codex_rule(events: Sequence[Event], steps: Sequence[StepData]) -> list[RecordedUsage | None]:
    """A step takes the ``last_token_usage`` of the first ``token_count`` after it and before the
    next step. A ``token_count`` without ``info.last_token_usage`` (Codex writes those for rate
    limits alone, ``info: null``) is not a usage record and is passed over, and so is one whose
    ``total_token_usage`` equals the previous record's: no request happened between them (a
    resumed rollout restates its last counts)."""
    out: list[RecordedUsage | None] = [None] * len(steps)
    index = {step.seq: i for i, step in enumerate(steps)}
    pending: int | None = None
    last_total: Any = None
    for seq, event in enumerate(events):
        kind = event.type
        if kind == "assistant/message":
            pending = index.get(seq)
        elif kind == CODEX_TOKEN_COUNT:
            info = _usage_info(event)
            usage, total = _get(info, "last_token_usage"), _get(info, "total_token_usage")
            if not isinstance(usage, dict):
                continue
            repeat = isinstance(total, dict) and total == last_total
            if isinstance(total, dict):
                last_total = total
            if pending is not None and not repeat:
                out[pending] = openai_recorded(usage)
                pending = None
    return out


# -- Gemini CLI, OpenCode, Copilot CLI, Qwen Code (importers.md §7.5, §8.7, §9.7, §10.5) --------


def _own_usage(
    recorded: Callable[[Any], RecordedUsage | None],
) -> UsageRule:
    """A rule for an agent whose importer copies each response's usage onto its own step."""

    def rule(events: Sequence[Event], steps: Sequence[StepData]) -> list[RecordedUsage | None]:
        return [recorded(_get(step.data, "usage")) for step in steps]

    rule.__doc__ = recorded.__doc__
    return rule


def _plus(a: int | None, b: int | None) -> int | None:
    """``a + (b ?? 0)``, null when ``a`` is."""
    return None if a is None else a + (b or 0)


def gemini_recorded(tokens: Any) -> RecordedUsage | None:
    """Gemini CLI's ``tokens`` {input, output, cached, thoughts?, tool?, total}: ``input``
    (promptTokenCount) includes the cached tokens, ``output`` (candidatesTokenCount) excludes the
    thoughts; implicit caching reports no writes; the prompt adds the tool-use prompt."""
    if not isinstance(tokens, dict):
        return None
    input = _count(tokens.get("input"))
    thoughts = _count(tokens.get("thoughts"))
    return RecordedUsage(
        input=input,
        cacheRead=_count(tokens.get("cached")),
        cacheWrite=None,
        output=_plus(_count(tokens.get("output")), thoughts),
        reasoning=thoughts,
        context=_plus(input, _count(tokens.get("tool"))),
    )


def opencode_recorded(tokens: Any) -> RecordedUsage | None:
    """OpenCode's ``tokens`` {input, output, reasoning, cache: {read, write}}: ``input`` excludes
    the cache reads and writes, and ``reasoning`` is billed beside ``output``, not inside it."""
    if not isinstance(tokens, dict):
        return None
    input = _count(tokens.get("input"))
    cache = tokens.get("cache")
    read, write = _count(_get(cache, "read")), _count(_get(cache, "write"))
    reasoning = _count(tokens.get("reasoning"))
    return RecordedUsage(
        input=input,
        cacheRead=read,
        cacheWrite=write,
        output=_plus(_count(tokens.get("output")), reasoning),
        reasoning=reasoning,
        context=_prompt(input, read, write),
    )


def copilot_recorded(usage: Any) -> RecordedUsage | None:
    """Copilot CLI's ``{outputTokens}``: the only count its log keeps (no prompt, no cache)."""
    if not isinstance(usage, dict):
        return None
    return RecordedUsage(
        input=None,
        cacheRead=None,
        cacheWrite=None,
        output=_count(usage.get("outputTokens")),
        reasoning=None,
        context=None,
    )


def _either(usage: dict[str, Any], key: str, older: str) -> int | None:
    return _count(usage[key] if key in usage else usage.get(older))


def qwen_recorded(usage: Any) -> RecordedUsage | None:
    """Qwen Code's ``usageMetadata`` (or its older renamed copy): ``promptTokenCount`` is the
    whole prompt, cache reads inside it; cache writes are not recorded apart."""
    if not isinstance(usage, dict):
        return None
    input = _either(usage, "promptTokenCount", "input")
    return RecordedUsage(
        input=input,
        cacheRead=_either(usage, "cachedContentTokenCount", "cached"),
        cacheWrite=None,
        output=_either(usage, "candidatesTokenCount", "output"),
        reasoning=_either(usage, "thoughtsTokenCount", "thoughts"),
        context=input,
    )


def no_rule(events: Sequence[Event], steps: Sequence[StepData]) -> list[RecordedUsage | None]:
    """An agent whose usage this service does not read: nothing recorded."""
    return [None] * len(steps)


# The seam: one rule per importer's agent name (importers.md §0.8 ``source.agent``).
RULES: dict[str, UsageRule] = {
    "claude-code": claude_rule,
    "codex": codex_rule,
    "gemini-cli": _own_usage(gemini_recorded),
    "opencode": _own_usage(opencode_recorded),
    "copilot-cli": _own_usage(copilot_recorded),
    "qwen-code": _own_usage(qwen_recorded),
}


def rule_for(header: Header) -> UsageRule:
    """dsh's rule for a header without ``source``; the agent's rule, or none, otherwise."""
    value = header.to_value()
    if "source" not in value:
        return dsh_rule
    agent = _get(value["source"], "agent")
    return RULES.get(agent, no_rule) if isinstance(agent, str) else no_rule
