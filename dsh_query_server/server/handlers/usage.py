"""Tokens and cost: one session's counted responses, and the corpus' totals by group
(usage.md §1, §4)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

from msgspec import UNSET

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...model.filters import SessionFilter
from ...model.params import Expect, Params, SessionId, Spec
from ...model.usage import SessionUsage, UsageSummary
from ...values import is_safe_integer
from ..registry import method


class ReadUsageParams(Params):
    """``includeDescendants``: also every descendant session's totals, and all of them summed
    (usage.md §1). Null is absent."""

    sessionId: SessionId
    includeDescendants: Annotated[bool | None, Expect("a boolean")] = None


def _time_or_null(value: Any) -> bool:
    return value is None or is_safe_integer(value)


def _time_zone(value: Any) -> bool:
    if value is None:
        return True
    try:
        ZoneInfo(value)
    except (ValueError, LookupError, OSError):  # ZoneInfoNotFoundError is a LookupError
        return False
    return True


Group = Literal["day", "week", "month", "agent", "model", "cwd", "session"]
TimeBound = Annotated[
    Any, Spec(int | None), Expect("a safe integer (epoch milliseconds)", check=_time_or_null)
]


class UsageSummaryParams(Params):
    """``since`` / ``until``: epoch milliseconds, a response counts when ``since <= time <
    until``; ``timeZone``: an IANA name for the day, week and month groups (default UTC). The
    filters are checked by the service, after these (semantics.md §3.12)."""

    groupBy: Annotated[
        Group,
        Expect('one of "day", "week", "month", "agent", "model", "cwd", "session"'),
    ]
    since: TimeBound = None
    until: TimeBound = None
    timeZone: Annotated[str | None, Expect("an IANA time zone name", check=_time_zone)] = None
    # Absent: every session. The filter language checks it (§4), null included.
    filters: Annotated[Any, Spec(list[SessionFilter])] = UNSET


@method(
    "sessionQuery/readUsage",
    params=ReadUsageParams,
    result=SessionUsage,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD),
)
def read_usage(rt: Runtime, p: ReadUsageParams, token: CancelToken) -> SessionUsage:
    """One session's tokens and cost per counted response and in total, with its descendants'
    when asked (usage.md §1)."""
    return rt.service.read_usage(p.sessionId, bool(p.includeDescendants), token)


@method(
    "sessionQuery/usageSummary",
    params=UsageSummaryParams,
    result=UsageSummary,
    errors=(
        E.INVALID_REQUEST,
        E.INVALID_FILTER,
        E.ABORTED,
        E.PERSISTENCE_FAILED,
        E.SOURCE_CONFLICT,
    ),
)
def usage_summary(rt: Runtime, p: UsageSummaryParams, token: CancelToken) -> UsageSummary:
    """Tokens and cost over the corpus' sessions the filters accept, by day, week, month,
    agent, model, cwd or session (usage.md §4)."""
    return rt.service.usage_summary(p.filters, p.groupBy, p.since, p.until, p.timeZone, token)
