"""``sessionQuery/readUsage`` and ``sessionQuery/usageSummary`` (usage.md §1, §4): counted
responses (counting.py), priced (prices.py) and summed (tally.py), over one session and its
descendants, or over the corpus grouped by time, agent, model, cwd or session.

Every call observes the corpus afresh (semantics.md §3.0.4) and reads each session through the
service's loads (§3.0.5). The summary keeps one thing between calls: each persisted session's
priced responses under the revision its backend listed for it just before the read (usage.md
§4.2). A revision changes whenever the stored log does, so a kept entry is used only for the very
log it was computed from; a live session is always read.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable
from typing import Any
from zoneinfo import ZoneInfo

from msgspec import UNSET

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import QueryError
from ..model import wire
from ..model.event import Header
from ..model.usage import (
    DescendantUsage,
    ModelShare,
    PeakContext,
    SessionUsage,
    SkippedSession,
    UsageRow,
    UsageSummary,
)
from ..values import is_safe_integer
from .counting import Counted, agent_of, count
from .filters import session_matches, validate_session_filters
from .lineage import children_index
from .loaded import Loaded, Record, check_cancelled
from .loading import Loader
from .prices import PriceTable
from .tally import Priced, Tally, price, step_of

GROUPS = ("day", "week", "month", "agent", "model", "cwd", "session")
TIME_GROUPS = ("day", "week", "month")


class UsageService:
    def __init__(self, loader: Loader, prices_path: str | None = None) -> None:
        self.loader = loader
        self.prices_path = prices_path
        self._table: PriceTable | None = None
        # (binding, its memo: session id -> (revision, priced responses)); a new binding clears it
        self._kept: tuple[Any, dict[str, tuple[str, list[Priced]]]] = (None, {})
        self._lock = threading.Lock()

    @property
    def table(self) -> PriceTable:
        """Built on first use: reading the package's price data takes a quarter of a second."""
        if self._table is None:
            self._table = PriceTable(self.prices_path)
        return self._table

    def _priced(self, loaded: Loaded) -> tuple[Counted, list[Priced]]:
        counted = count(loaded.header, loaded.events)
        table = self.table
        return counted, [price(table, r) for r in counted.responses]

    # -- readUsage (usage.md §1) -----------------------------------------------------------

    def read_usage(
        self, session_id: str, include_descendants: bool, token: CancelToken = NULL_TOKEN
    ) -> SessionUsage:
        loaded = self.loader.load(session_id, token, outline=True)
        check_cancelled(token)
        counted, priced = self._priced(loaded)
        total = Tally()
        for p in priced:
            total.add(session_id, p)
        peak: PeakContext | None = None
        for p in priced:
            context = p.response.recorded.context
            if context is not None and (peak is None or context > peak.context):
                peak = PeakContext(seq=p.response.seq, context=context)
        result = SessionUsage(
            session=wire.raw(loaded.header),
            agent=agent_of(loaded.header),
            seedResponses=counted.seed_responses,
            steps=[step_of(p) for p in priced],
            peakContext=peak,
            total=total.to_wire(),
            prices=self.table.source,
        )
        if include_descendants:
            self._descendants(result, session_id, total, token)
        return result

    def _descendants(
        self, result: SessionUsage, session_id: str, total: Tally, token: CancelToken
    ) -> None:
        records = self.loader.corpus(token)
        check_cancelled(token)
        children = children_index(records)
        whole = Tally()
        whole.merge(total)
        out: list[DescendantUsage] = []
        skipped: list[SkippedSession] = []
        seen = {session_id}
        stack = list(reversed(children.get(session_id, [])))
        while stack:  # depth first, each level by createdAt then id (the lineage's order)
            record = stack.pop()
            sid = record.header.id
            if sid in seen:
                continue
            seen.add(sid)
            stack.extend(reversed(children.get(sid, [])))
            tally = self._tally_of(record, token, skipped)
            if tally is None:
                continue
            whole.merge(tally)
            out.append(
                DescendantUsage(
                    sessionId=sid,
                    parentSession=record.header.parent_session,
                    agent=agent_of(record.header),
                    total=tally.to_wire(),
                )
            )
        result.descendants = out
        result.withDescendants = whole.to_wire()
        result.skipped = skipped

    def _tally_of(
        self, record: Record, token: CancelToken, skipped: list[SkippedSession]
    ) -> Tally | None:
        loaded = self._load(record.header, token, skipped)
        if loaded is None:
            return None
        tally = Tally()
        for p in self._priced(loaded)[1]:
            tally.add(record.header.id, p)
        return tally

    def _load(
        self, header: Header, token: CancelToken, skipped: list[SkippedSession]
    ) -> Loaded | None:
        """One corpus session's log, or None (noted in ``skipped``) when it cannot be read."""
        check_cancelled(token)
        sid = header.id
        if not isinstance(sid, str):
            skipped.append(
                SkippedSession(sessionId=sid, code=errors.SESSION_NOT_FOUND, message="no id")
            )
            return None
        try:
            return self.loader.load(sid, token, outline=True)
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            skipped.append(SkippedSession(sessionId=sid, code=exc.code, message=exc.message))
            return None

    # -- usageSummary (usage.md §4) ------------------------------------------------------

    def usage_summary(
        self,
        filters: Any,
        group_by: str,
        since: int | None,
        until: int | None,
        time_zone: str,
        token: CancelToken = NULL_TOKEN,
    ) -> UsageSummary:
        clauses = validate_session_filters(filters)
        records = [
            r
            for r in self.loader.corpus(token)
            if session_matches(clauses, r.header, r.live, r.persisted)
        ]
        check_cancelled(token)
        zone = ZoneInfo(time_zone)
        binding, revisions, kept = self._revisions(token)
        groups: dict[Any, Tally] = {}
        shares: dict[Any, dict[str | None, Tally]] = {}  # time groups: key -> model -> tally
        total = Tally()
        skipped: list[SkippedSession] = []
        for record in records:
            found = self._summed(record, revisions, kept, token, skipped)
            if found is None:
                continue
            header, priced = found
            key_of = _key_function(group_by, header, zone)
            for p in priced:
                time = p.response.time
                if not _within(time, since, until):
                    continue
                key = key_of(p)
                tally = groups.get(key)
                if tally is None:
                    tally = groups[key] = Tally()
                tally.add(header.id, p)
                total.add(header.id, p)
                if group_by in TIME_GROUPS:
                    by_model = shares.setdefault(key, {})
                    share = by_model.get(p.response.model)
                    if share is None:
                        share = by_model[p.response.model] = Tally()
                    share.add(header.id, p)
        check_cancelled(token)
        return UsageSummary(
            groupBy=group_by,
            timeZone=time_zone,
            since=since,
            until=until,
            rows=[_row(k, t, shares.get(k)) for k, t in _ordered(group_by, groups)],
            total=total.to_wire(),
            skipped=skipped,
            prices=self.table.source,
        )

    def _revisions(
        self, token: CancelToken
    ) -> tuple[Any, dict[Any, str], dict[str, tuple[str, list[Priced]]]]:
        """The current binding, the revision it lists per session now, and the memo for it."""
        binding = self.loader.binding.current()
        with self._lock:
            if self._kept[0] is not binding:
                self._kept = (binding, {})
            kept = self._kept[1]
        if binding is None:
            return None, {}, kept
        try:
            snapshots = binding.logs.snapshots(token)
        except Exception:  # noqa: BLE001 - without revisions every session is simply read
            return binding, {}, kept
        return binding, {sid: s.revision for sid, s in snapshots.by_id.items()}, kept

    def _summed(
        self,
        record: Record,
        revisions: dict[Any, str],
        kept: dict[str, tuple[str, list[Priced]]],
        token: CancelToken,
        skipped: list[SkippedSession],
    ) -> tuple[Header, list[Priced]] | None:
        """One session's priced responses: kept ones when its listed revision is the one they
        were computed at, else read (and kept, for a persisted session)."""
        sid = record.header.id
        revision = None if record.live else revisions.get(sid)
        if revision is not None:
            entry = kept.get(sid)
            if entry is not None and entry[0] == revision:
                return record.header, entry[1]
        loaded = self._load(record.header, token, skipped)
        if loaded is None:
            return None
        priced = self._priced(loaded)[1]
        if revision is not None and not loaded.live:
            with self._lock:
                kept[sid] = (revision, priced)
        return loaded.header, priced


def _row(key: Any, tally: Tally, by_model: dict[str | None, Tally] | None) -> UsageRow:
    row = UsageRow(key=key, total=tally.to_wire())
    if by_model is not None:
        ordered = sorted(by_model.items(), key=lambda kv: (-kv[1].tokens(), str(kv[0])))
        row.byModel = [ModelShare(model=m, total=t.to_wire()) for m, t in ordered]
    return row


def _within(time: Any, since: int | None, until: int | None) -> bool:
    if since is None and until is None:
        return True
    if not is_safe_integer(time):
        return False
    return (since is None or time >= since) and (until is None or time < until)


def _key_function(group_by: str, header: Header, zone: ZoneInfo) -> Callable[[Priced], Any]:
    """The group of one priced response (usage.md §4.1)."""
    if group_by in TIME_GROUPS:
        label = _TIME_LABELS[group_by]

        def by_time(p: Priced) -> Any:
            time = p.response.time
            if not is_safe_integer(time):
                return None
            try:
                return label(dt.datetime.fromtimestamp(time // 1000, zone))
            except (ValueError, OverflowError, OSError):  # past the calendar's years
                return None

        return by_time
    if group_by == "model":
        return lambda p: p.response.model
    if group_by == "agent":
        agent = agent_of(header)
        return lambda p: agent
    if group_by == "cwd":
        cwd = None if header.cwd is UNSET else header.cwd
        return lambda p: cwd
    sid = header.id
    return lambda p: sid


def _iso_week(t: dt.datetime) -> str:
    year, week, _ = t.isocalendar()
    return f"{year}-W{week:02d}"


_TIME_LABELS: dict[str, Callable[[dt.datetime], str]] = {
    "day": lambda t: t.strftime("%Y-%m-%d"),
    "week": _iso_week,
    "month": lambda t: t.strftime("%Y-%m"),
}


def _ordered(group_by: str, groups: dict[Any, Tally]) -> Iterable[tuple[Any, Tally]]:
    """Time groups oldest first; the others by tokens, most first, then key. A null key last."""
    items = list(groups.items())
    if group_by in TIME_GROUPS:
        items.sort(key=lambda kv: (kv[0] is None, kv[0] or ""))
    else:
        items.sort(key=lambda kv: (kv[0] is None, -kv[1].tokens(), str(kv[0])))
    return items
