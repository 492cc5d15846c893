"""``session_search`` (tools.md §1.6): the workspace scope is applied inside the search.

Steps 2–4 (the snapshot ``V``, the parent and cwd clauses) and the parent visibility of step 7
are decided by the search service on the index its reconcile has just brought in line with the
live store and the binding (search/scope.py): the same sessions a ``listSessions`` at that moment
gives, without listing the whole corpus on every call. An index that cannot search at all (search
disabled, or failed to open) takes the listing path, where an empty workspace still answers
before the search fails, exactly as the steps read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..model.params import decode
from ..query.loaded import Record
from ..search.scope import Scope
from ..search.wire import SessionSearchPage, SessionSearchRequest
from . import args as A
from . import tools
from .browse_tool import empty_note
from .render import availability, iso_time
from .tools import (
    CAP_LINE,
    NO_SESSIONS,
    Call,
    Result,
    _event_filters,
    _header,
    _hit_line,
    _next_cursor,
    _parent_line,
    _struct,
)

Fetch = Callable[[dict[str, Any]], tuple[SessionSearchPage, frozenset[str]]]
_UNSEARCHABLE = (errors.SEARCH_DISABLED, errors.INDEX_FAILED)


def session_search(call: Call, a: dict[str, Any]) -> Result:
    query = A.query_text(a["query"])
    session_ids = A.nonempty(a.get("session_ids"), "session_ids")
    created = A.stamp_range(a.get("created_at_from"), a.get("created_at_to"), "created_at")
    avail = A.nonempty(a.get("availability"), "availability")
    seqs = A.seq_range(a.get("event_seq_from"), a.get("event_seq_to"))
    times = A.stamp_range(a.get("event_time_from"), a.get("event_time_to"), "time")
    types = A.nonempty(a.get("event_types"), "event_types")
    surfaces = A.nonempty(a.get("event_surfaces"), "surfaces")
    parents = A.nonempty(a.get("parent_session_ids"), "parent_session_ids")
    if parents is not None:
        parents = list(dict.fromkeys(parents))
    include_roots = a.get("include_root_sessions") is True

    session_filters: list[dict[str, Any]] = []
    if session_ids is not None:
        session_filters.append({"kind": "id", "values": session_ids})
    if (clause := A.range_clause("created-at", *created)) is not None:
        session_filters.append(clause)
    if avail is not None:
        session_filters.append({"kind": "availability", "values": avail})
    request: dict[str, Any] = {
        "query": query,
        "sessionFilters": session_filters,
        "eventFilters": _event_filters(seqs, times, types, surfaces),
    }
    workspace = call.workspace
    scope = Scope(
        workspace.visible,
        (workspace.base, *workspace.roots),
        None if parents is None else tuple(parents),
        include_roots,
    )
    search = call.runtime.search

    def scoped(r: dict[str, Any]) -> tuple[SessionSearchPage, frozenset[str]]:
        return search.search_sessions_scoped(decode(SessionSearchRequest, r), scope, call.token)

    def first_scoped() -> tuple[SessionSearchPage, frozenset[str]] | None:
        try:
            return scoped(request)
        except QueryError as exc:
            if exc.code in _UNSEARCHABLE:
                return None
            raise

    fetch: Fetch = scoped
    first = call.svc("sessionQuery/searchSessions", first_scoped)
    in_scope = first  # only a scoped page's unreadable sessions are the workspace's
    if first is None:
        listed = _listed_request(call, request, parents, include_roots)
        if listed is None:
            return _search_result(call, [], False)
        request = listed

        def unscoped(r: dict[str, Any]) -> tuple[SessionSearchPage, frozenset[str]]:
            return search.search_sessions(decode(SessionSearchRequest, r), call.token), frozenset()

        fetch = unscoped
        first = call.svc("sessionQuery/searchSessions", lambda: unscoped(request))
    hits, capped = _pages(call, request, first, fetch)
    result = _search_result(call, hits, capped)
    return result if in_scope is None else _with_unreadable(result, in_scope[0])


def _with_unreadable(result: Result, page: SessionSearchPage) -> Result:
    """[ours] (semantics.md §6.5): the workspace's sessions the search left out because their
    stored log is unreadable, named briefly by id (never by path: the store lies outside the
    workspace) so an agent knows the answer may be incomplete."""
    if page.unreadableCount is UNSET or page.unreadable is UNSET:
        return result
    count, named = page.unreadableCount, [u.sessionId for u in page.unreadable]
    more = f" and {count - len(named)} more" if count > len(named) else ""
    noun = "session" if count == 1 else "sessions"
    line = (
        f"Note: {count} {noun} in this workspace could not be read (damaged log) and "
        f"{'was' if count == 1 else 'were'} left out: {', '.join(named)}{more}."
    )
    structured = {
        **result.structured,
        "unreadable": [{"sessionId": u.sessionId, "code": u.code} for u in page.unreadable],
        "unreadableCount": count,
    }
    return Result(f"{result.text}\n\n{line}", structured)


def _listed_request(
    call: Call, request: dict[str, Any], parents: list[str] | None, include_roots: bool
) -> dict[str, Any] | None:
    """Steps 2-4 literally: one listSessions snapshot ``V`` and the clauses it gives; None when
    the result is empty without a search."""
    service = call.runtime.service
    with call.token.counting(share=False):  # the search's index build owns the percentage
        records: list[Record] = call.svc(
            "sessionQuery/listSessions", lambda: service.corpus(call.token)
        )
    visible = [r for r in records if call.workspace.visible(r.header.cwd)]
    call.visible_ids.update(r.header.id for r in visible)
    session_filters: list[dict[str, Any]] = list(request["sessionFilters"])
    if parents is not None or include_roots:
        parent_values: list[str | None] = [p for p in parents or [] if p in call.visible_ids]
        if include_roots:
            parent_values.append(None)
        if not parent_values:
            return None
        session_filters.append({"kind": "parent", "values": parent_values})
    if not visible:
        return None
    cwds = sorted({r.header.cwd for r in visible if isinstance(r.header.cwd, str)})
    session_filters.append({"kind": "cwd", "values": cwds})
    return {**request, "sessionFilters": session_filters}


def _pages(
    call: Call,
    request: dict[str, Any],
    first: tuple[SessionSearchPage, frozenset[str]],
    fetch: Fetch,
) -> tuple[list[Any], bool]:
    """Step 5: accepted hits up to the cap, following cursors."""
    hits: list[Any] = []
    capped = False
    seen_cursors: set[str] = set()
    page, visible_parents = first
    while True:
        call.visible_ids.update(visible_parents)
        for hit in page.items:
            header = _header(hit.header)
            if not call.visible(header) or header.get("id") == call.caller:
                continue
            if len(hits) == call.max_results:
                capped = True
                break
            hits.append((header, hit))
        if capped or page.nextCursor is UNSET:
            return hits, capped
        _next_cursor(seen_cursors, page.nextCursor)
        request["cursor"] = page.nextCursor
        page, visible_parents = call.svc("sessionQuery/searchSessions", lambda: fetch(request))


def _search_result(call: Call, hits: list[Any], capped: bool) -> Result:
    """Steps 6 and 7: one title batch, then the text and structured content."""
    if not hits:
        lines, workspace = empty_note(call)
        return Result(
            "\n".join([NO_SESSIONS, *lines]),
            {"items": [], "capped": False, "workspace": workspace},
        )
    titles = call.titles([h["id"] for h, _ in hits])
    lines = [f"Session search results ({len(hits)}):"]
    items: list[dict[str, Any]] = []
    for i, (header, hit) in enumerate(hits, 1):
        text, title = titles[header["id"]]
        rec = call.rec(header, hit.live, hit.persisted, title)
        items.append({**rec, "bestMatch": _struct(hit.bestMatch)})
        best = hit.bestMatch
        lines += [
            "",
            f"{i}. Session {header['id']} — {text}",
            f"   Created: {iso_time(header.get('createdAt'))}",
            f"   Parent: {_parent_line(rec)}",
            f"   Availability: {availability(hit.live, hit.persisted)}",
            f"   Best match: {_hit_line(best)}",
            f"   Snippet: {best.snippet}",
        ]
    if capped:
        lines += ["", CAP_LINE]
    return Result("\n".join(lines), {"items": items, "capped": capped})


RUN = {"session_search": session_search, **tools.RUN}
