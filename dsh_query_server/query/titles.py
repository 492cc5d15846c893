"""Titles (semantics.md §3.8): reads that fan out over many sessions, on the service's one
worker pool (shared with the tree's labels, ``labels.py``).

Live sessions come from memory. Each persisted log is read by a pool worker that projects it to
its small result before claiming the next id, so a batch never holds more than the pool's size of
full logs. Through the mount's door (persistence/reads.py): a backend that reads windows has
verified the log once per revision and knows where its last title is, so a title costs a few small
window reads; any other is inspected once. A title read at a known revision is remembered
(titlememo.py) and served again while the batch's listing gives the id that same revision.
"""

from __future__ import annotations

from contextlib import nullcontext

from msgspec import UNSET

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import QueryError
from ..model import wire
from ..model.event import Event, Header, headers_compatible
from ..persistence.mount.binding import Binding
from ..persistence.reads import Listing, StoredLogs
from ..progress import Tally
from ..session.store import LiveSnapshot
from .loaded import check_cancelled, conflict, not_found
from .loading import Loader, metered
from .titlefold import last_title_event, title_from, title_window
from .titlememo import KnownTitle, TitleBatch, TitleMemo
from .workers import WorkerPool, run_claims

TitleResult = wire.SessionTitleObservationResult
# The count of a batch's title reads (protocol.md §8): the logs read, a title the memo holds is
# not; the tree's labels (server/tree/labels.py) count theirs the same way.
TITLES_READ = "reading titles {done:,} of {total:,} sessions"


class Titles:
    def __init__(self, loader: Loader, pool: WorkerPool, concurrency: int) -> None:
        self.loader = loader
        self.pool = pool
        self.concurrency = concurrency
        self.memo = TitleMemo()
        self._last: TitleBatch | None = None  # the last batch answered from the memo alone

    # -- readTitles / readTitle -------------------------------------------------------------

    def read_titles(
        self, session_ids: list[str], token: CancelToken = NULL_TOKEN
    ) -> list[TitleResult]:
        unique: list[str] = list(dict.fromkeys(session_ids))
        if not unique:
            return []
        check_cancelled(token)
        store = self.loader.store
        generation = store.generation  # read before the store is looked at: a later commit shows
        last = self._last
        if last is not None and last.live == generation and last.ids == unique:
            listing = _listing(self.loader.binding.current(), token)
            if listing is last.listing:
                return list(last.results)
        results: dict[str, TitleResult] = {}
        pending: list[str] = []
        live_ids = frozenset(store.ids())  # one look at the live ids, not a lock per id
        for sid in unique:
            live = store.snapshot(sid) if sid in live_ids else None
            if live is None:
                pending.append(sid)
            else:
                results[sid] = _live_title_result(sid, live)
        # The listing is read after the live store was looked at (a session checkpointed and
        # then dropped from the store is in one or the other).
        proof = self._resolve_persisted(pending, results, token) if pending else None
        ordered = [results[sid] for sid in unique]
        if proof is not None:  # no log was read: every listed id was answered from the memo
            self._last = TitleBatch(unique, generation, proof, ordered)
        return ordered

    def read_title(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> wire.SessionTitleObservation:
        result = self.read_titles([session_id], token)[0]
        if result.status == "fulfilled" and isinstance(result.value, wire.SessionTitleObservation):
            return result.value
        reason = result.reason
        assert isinstance(reason, wire.RejectionReason)
        raise QueryError(
            reason.code,
            reason.message,
            cause=None if reason.cause is UNSET else reason.cause,
            session_id=session_id,
        )

    def _resolve_persisted(
        self, pending: list[str], results: dict[str, TitleResult], token: CancelToken
    ) -> Listing | None:
        """Each pending id's result; the listing they were answered from when no log was read
        (a TitleBatch's proof), else None."""
        binding = self.loader.binding.current()
        if binding is None:
            for sid in pending:
                results[sid] = _rejected(sid, not_found(sid))
            return None
        logs = binding.logs
        try:
            with token.counting(share=False):  # the titles read own the percentage
                listing = logs.listing(token)
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            for sid in pending:
                results[sid] = _rejected(sid, exc)
            return None
        listed = listing.by_id
        revisions = listing.revisions or {}
        asked = [(sid, revisions[sid]) for sid in pending if sid in revisions and sid in listed]
        unread = [sid for sid in pending if sid not in revisions or sid not in listed]
        for (sid, _), known in zip(asked, self.memo.get(logs, asked), strict=True):
            if known is None:
                unread.append(sid)
                continue
            # Read at this very revision: answered as the read would answer, conflict included.
            results[sid] = (
                known.result if known.fits(listed[sid]) else _rejected(sid, conflict(sid))
            )

        # One log to read (readTitle): its bytes, or rows, are what there is to count, as in a
        # read of one session, not "1 of 1"; several are read at once: the batch counts them.
        single = len(unread) == 1
        tally = Tally(token.progress, len(unread), TITLES_READ)

        def work(sid: str) -> None:
            results[sid] = self._persisted_title(logs, sid, listed.get(sid), token)
            if not single:
                tally.one()

        # The listed logs' shapes are read in one bulk pass first where the mount can (a worker
        # process maps them beside this one: importing/shapes.py); each such title then reads
        # its shape, or its log when none was kept. The pool reads the others.
        shaped: set[str] = set()
        listed_unread = [sid for sid in unread if sid in listed]
        if len(listed_unread) > 1:
            for sid in logs.shapes(listed_unread, token):
                shaped.add(sid)
                work(sid)
        rest = [sid for sid in unread if sid not in shaped] if shaped else unread
        with metered(token) if single else nullcontext():
            run_claims(rest, work, self.concurrency, token, pool=self.pool)
        check_cancelled(token)
        # An id the listing does not hold was answered by the live store or as not found: from
        # the proof's own parts, like a memo entry.
        return None if any(sid in listed for sid in unread) else listing

    def _persisted_title(
        self, logs: StoredLogs, sid: str, listed: Header | None, token: CancelToken
    ) -> TitleResult:
        store = self.loader.store
        try:
            if listed is None:
                live = store.snapshot(sid)
                if live is None:
                    raise not_found(sid)
                return _live_title_result(sid, live)
            meta, title, revision, length = _persisted_title_event(logs, sid, token)
            known = self.remember(logs, sid, revision, listed, meta, title, length)
            live = store.snapshot(sid)
            if live is not None:
                return _live_title_result(sid, live)
            if not known.compatible:
                raise conflict(sid)
            return known.result
        except QueryError as exc:
            return _rejected(sid, exc)

    def remember(
        self,
        logs: StoredLogs,
        sid: str,
        revision: str | None,
        listed: Header,
        meta: Header,
        title: Event | None,
        length: int | None,
    ) -> KnownTitle:
        """A title read of a log (its header ``meta``, last title event and length), checked
        against the ``listed`` header; kept in the memo when it was read at a known revision.
        Title batches and the tree's labels (server/tree/labels.py) both fill it."""
        compatible = headers_compatible(listed, meta)
        known = KnownTitle(meta, title, title_result(sid, meta, title), listed, compatible, length)
        if revision is not None:
            self.memo.put(logs, sid, revision, known)
        return known

    def known(
        self, session_ids: list[str], token: CancelToken = NULL_TOKEN
    ) -> dict[str, KnownTitle]:
        """The ids whose log was read at the very revision the mount's listing gives them now
        (one listing, no log read), with a header compatible with the listed one: what a title
        batch would answer from the memo. Live sessions are the caller's to look at."""
        binding = self.loader.binding.current()
        if binding is None or not binding.logs.lists_revisions:
            return {}  # no memo to prove: not even a listing is read
        listing = _listing(binding, token)
        if listing is None or listing.revisions is None:
            return {}
        revisions, listed = listing.revisions, listing.by_id
        asked = [(sid, revisions[sid]) for sid in session_ids if sid in revisions and sid in listed]
        found = zip(asked, self.memo.get(binding.logs, asked), strict=True)
        return {sid: known for (sid, _), known in found if known and known.fits(listed[sid])}


def _listing(binding: Binding | None, token: CancelToken) -> Listing | None:
    """The binding's listing for a batch's proof, or None (no binding, or a failed listing: the
    batch reads it again and reports the failure as it always does)."""
    if binding is None:
        return None
    try:
        return binding.logs.listing(token)
    except QueryError:
        return None


def _persisted_title_event(
    logs: StoredLogs, sid: str, token: CancelToken
) -> tuple[Header, Event | None, str | None, int]:
    """The header and last ``session/title`` event of a persisted log, with the errors of
    ``inspect``, the revision they were read at when the read knows it, and the log's length.
    A backend that reads windows verifies the log (once per revision) and says where the title
    is, so only that event is read; if the log moved between the two reads, it is inspected
    whole."""
    windows = logs.windows(sid, token)
    shape = windows.read(0, -1)  # nothing read but the verification and where the title is
    if shape.title is None:
        return shape.meta, None, shape.revision, shape.length
    found = title_window(windows.read, shape.title)
    if found is not None:  # this window alone says its event is the last title at its revision
        return found.meta, found.events[0], found.revision, found.length
    inspection = logs.log(sid, token)
    events = inspection.events
    return inspection.meta, last_title_event(events), None, len(events)


def _rejected(sid: str, exc: QueryError) -> TitleResult:
    reason = wire.RejectionReason(code=exc.code, message=exc.message)
    if exc.cause is not None:
        reason.cause = exc.cause
    return TitleResult(sessionId=sid, status="rejected", reason=reason)


def _live_title_result(sid: str, live: LiveSnapshot) -> TitleResult:
    # The store remembers where the last title event is: no scan of a long live log.
    event = None if live.title_seq is None else live.events[live.title_seq]
    return title_result(sid, live.header, event)


def title_result(sid: str, header: Header, event: Event | None) -> TitleResult:
    try:
        value = wire.SessionTitleObservation(session=wire.raw(header))
        title = title_from(sid, event)
        if title is not None:
            value.title = title
    except QueryError as exc:
        return _rejected(sid, exc)
    return TitleResult(sessionId=sid, status="fulfilled", value=value)
