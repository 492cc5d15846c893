"""Counted responses priced and summed (usage.md §2.5, §3).

A sum of counts is ``None`` until some response recorded that count: "never recorded" stays
distinguishable from 0. Costs are exact decimals; a response without a price (its model has
none, or it did not record both its prompt and its output) adds its tokens and no cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..model.usage import UsageStep, UsageTotals
from .counting import Response
from .prices import PriceTable

COUNTS = ("input", "cacheRead", "cacheWrite", "output", "reasoning")
UNKNOWN_MODEL = "unknown"


@dataclass(frozen=True, slots=True)
class Priced:
    response: Response
    cost: Decimal | None
    source: str | None


def price(table: PriceTable, response: Response) -> Priced:
    usage = response.recorded
    if usage.context is None or usage.output is None:
        return Priced(response, None, None)
    found = table.price(response.provider, response.model, response.time)
    if found is None:
        return Priced(response, None, None)
    cost = found.rates.cost(
        usage.context, usage.cacheRead or 0, usage.cacheWrite or 0, usage.output
    )
    return Priced(response, cost, found.source if cost is not None else None)


def usd(value: Decimal | None) -> str | None:
    """An exact decimal string of dollars, in plain notation (never ``1E-7``)."""
    if value is None:
        return None
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def step_of(priced: Priced) -> UsageStep:
    r, usage = priced.response, priced.response.recorded
    return UsageStep(
        seq=r.seq,
        time=r.time,
        model=r.model,
        input=r.uncached,
        cacheRead=usage.cacheRead,
        cacheWrite=usage.cacheWrite,
        output=usage.output,
        reasoning=usage.reasoning,
        context=usage.context,
        costUsd=usd(priced.cost),
        priceSource=priced.source,
    )


@dataclass(slots=True)
class Tally:
    sessions: set[Any] = field(default_factory=set[Any])
    responses: int = 0
    sums: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(COUNTS))
    cost: Decimal | None = None
    unpriced: int = 0
    unpriced_models: set[str] = field(default_factory=set[str])
    models: set[str] = field(default_factory=set[str])

    def add(self, session_id: Any, priced: Priced) -> None:
        self.sessions.add(session_id)
        self.responses += 1
        response = priced.response
        usage = response.recorded
        sums = self.sums
        for key in COUNTS:
            value = response.uncached if key == "input" else getattr(usage, key)
            if value is not None:
                current = sums[key]
                sums[key] = value if current is None else current + value
        model = priced.response.model or UNKNOWN_MODEL
        self.models.add(model)
        if priced.cost is None:
            self.unpriced += 1
            self.unpriced_models.add(model)
        else:
            self.cost = priced.cost if self.cost is None else self.cost + priced.cost

    def merge(self, other: Tally) -> None:
        self.sessions |= other.sessions
        self.responses += other.responses
        for key, value in other.sums.items():
            if value is not None:
                current = self.sums[key]
                self.sums[key] = value if current is None else current + value
        if other.cost is not None:
            self.cost = other.cost if self.cost is None else self.cost + other.cost
        self.unpriced += other.unpriced
        self.unpriced_models |= other.unpriced_models
        self.models |= other.models

    def tokens(self) -> int:
        """Everything counted, for ordering groups: the prompt parts and the output."""
        sums = self.sums
        return sum(sums[k] or 0 for k in ("input", "cacheRead", "cacheWrite", "output"))

    def to_wire(self) -> UsageTotals:
        sums = self.sums
        return UsageTotals(
            sessions=len(self.sessions),
            responses=self.responses,
            input=sums["input"],
            cacheRead=sums["cacheRead"],
            cacheWrite=sums["cacheWrite"],
            output=sums["output"],
            reasoning=sums["reasoning"],
            costUsd=usd(self.cost),
            unpricedResponses=self.unpriced,
            unpricedModels=sorted(self.unpriced_models),
            models=sorted(self.models),
        )


def sum_totals(totals: list[UsageTotals]) -> UsageTotals:
    """Several totals as one, as if their responses had been tallied together (sessions are
    assumed distinct: each total is one session's, or of disjoint sessions)."""
    out = Tally()
    for t in totals:
        part = Tally(
            sessions=set(range(len(out.sessions), len(out.sessions) + t.sessions)),
            responses=t.responses,
            sums={key: getattr(t, key) for key in COUNTS},
            cost=None if t.costUsd is None else Decimal(t.costUsd),
            unpriced=t.unpricedResponses,
            unpriced_models=set(t.unpricedModels),
            models=set(t.models),
        )
        out.merge(part)
    return out.to_wire()
