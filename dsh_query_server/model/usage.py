"""The result shapes of ``sessionQuery/readUsage`` and ``sessionQuery/usageSummary`` (usage.md).

A count is ``int | None`` without a default, so msgspec always writes it: ``null`` means "never
recorded", which is never 0. A cost is an exact decimal string of US dollars (usage.md §3), so
that totals add up exactly whatever the order; ``null`` means "no price".
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, Raw, UnsetType

from .wire import Wire


class UsageStep(Wire):
    """One counted model response (usage.md §2): the ``assistant/message`` at ``seq`` that
    carries the response's recorded usage (views.md §2 ``recorded``)."""

    seq: int
    time: Any
    model: str | None
    input: int | None
    cacheRead: int | None
    cacheWrite: int | None
    output: int | None
    reasoning: int | None
    context: int | None
    costUsd: str | None
    priceSource: str | None


class UsageTotals(Wire):
    """Counted responses summed (usage.md §2.5): a count is null when no response recorded it;
    ``costUsd`` sums the priced responses, null when none was priced; the others are
    ``unpricedResponses``, their models in ``unpricedModels``."""

    sessions: int
    responses: int
    input: int | None
    cacheRead: int | None
    cacheWrite: int | None
    output: int | None
    reasoning: int | None
    costUsd: str | None
    unpricedResponses: int
    unpricedModels: list[str]
    models: list[str]


class PeakContext(Wire):
    """The counted response with the largest recorded prompt (the earliest on a tie)."""

    seq: int
    context: int


class SkippedSession(Wire):
    """A session left out of a total because it could not be read, with the error it gave."""

    sessionId: Any
    code: str
    message: str


class DescendantUsage(Wire):
    sessionId: str
    parentSession: Any
    agent: str
    total: UsageTotals


class SessionUsage(Wire):
    session: Raw
    agent: str
    seedResponses: int
    steps: list[UsageStep]
    peakContext: PeakContext | None
    total: UsageTotals
    prices: str
    descendants: list[DescendantUsage] | UnsetType = UNSET
    withDescendants: UsageTotals | UnsetType = UNSET
    skipped: list[SkippedSession] | UnsetType = UNSET


class ModelShare(Wire):
    """One model's part of a time group's row."""

    model: str | None
    total: UsageTotals


class UsageRow(Wire):
    """One group of ``usageSummary``: its key (usage.md §4.1) and its totals; a time group's
    row also splits them by model (``byModel``, most tokens first)."""

    key: Any
    total: UsageTotals
    byModel: list[ModelShare] | UnsetType = UNSET


class UsageSummary(Wire):
    groupBy: str
    timeZone: str
    since: Any
    until: Any
    rows: list[UsageRow]
    total: UsageTotals
    skipped: list[SkippedSession]
    prices: str
