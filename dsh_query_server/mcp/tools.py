"""What each tool does (tools.md §1.6–§1.9), synchronous, in a worker thread.

A ``Call`` holds one tool call's fixed workspace, caller and token. Every service call goes
through ``Call.svc``, the sanitizer: a failure leaves with the spec's code and message only, never
an inner message, a path or a hidden id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from msgspec import UNSET

from .. import errors, jsoncodec
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..errors import QueryError
from ..model.event import Event, Header
from ..model.params import decode
from ..model.text import extract_text
from ..model.workspace import Workspace
from ..query import lineage
from ..query.loaded import Record
from ..search.wire import SessionEventSearchRequest
from . import args as A
from .args import ToolError
from .render import availability, indent_text, iso_time, js_number, js_stringify

log = logging.getLogger("dsh_query_server.mcp")
T = TypeVar("T")

UNAUTHORIZED = "SESSION_QUERY_TOOL_UNAUTHORIZED"
MISSING_CALLER = "SESSION_QUERY_TOOL_MISSING_CALLER"
NO_CURRENT_STEP = "SESSION_QUERY_TOOL_NO_CURRENT_STEP"
TOOL_FAILED = "SESSION_QUERY_TOOL_FAILED"
TOOL_TIMEOUT = "SESSION_QUERY_TOOL_TIMEOUT"
MAX_SEQ = 2**53 - 1
NO_SESSIONS = "No prior session matches found."
NO_EVENTS = "No prior event matches found."
CAP_LINE = "Result cap reached. Narrow the query or add filters to find additional matches."

SANITIZED = {
    errors.ABORTED: "session query was cancelled",
    errors.CORRUPT_SESSION: "session event history is corrupt",
    errors.EVENT_NOT_FOUND: "session event was not found",
    errors.INDEX_FAILED: "session search index is unavailable",
    errors.INVALID_CURSOR: "session search continuation is invalid",
    errors.INVALID_FILTER: "session query filters were rejected",
    errors.INVALID_LIMIT: "session query result limit was rejected",
    errors.INVALID_QUERY: "session query was rejected",
    errors.INVALID_LINEAGE: "session lineage is invalid",
    errors.INVALID_SURFACE: "session event history is invalid",
    errors.INVALID_WINDOW: "session event window is invalid",
    errors.PERSISTENCE_FAILED: "session history storage is unavailable",
    errors.SEARCH_DISABLED: "session search is disabled in this deployment",
    errors.SESSION_NOT_FOUND: "session was not found",
    errors.STALE_CURSOR: "session history changed while paging; retry the complete search call",
}
FAILED_MESSAGE = "session query operation failed"
# An UNAUTHORIZED the service raised itself, where no target id is at hand.
UNAUTHORIZED_MESSAGE = "no such session in this workspace"


def not_found(session_id: str) -> ToolError:
    """A missing id and a hidden one answer this same text (§1.2) **[ours]**: it names only the
    id the caller gave, so it tells nothing about sessions outside the workspace."""
    return ToolError(UNAUTHORIZED, f"no session with id {session_id} in this workspace")


class Interrupted(Exception):
    """The call's token fired (deadline or notifications/cancelled); §1.10 decides the answer."""


def sanitize(code: str) -> tuple[str, str]:
    if code in SANITIZED:
        return code, SANITIZED[code]
    if code == UNAUTHORIZED:
        return code, UNAUTHORIZED_MESSAGE
    return TOOL_FAILED, FAILED_MESSAGE


@dataclass
class Result:
    text: str
    structured: dict[str, Any]


@dataclass
class Call:
    runtime: Runtime
    token: CancelToken
    workspace: Workspace
    caller: str | None
    max_results: int
    visible_ids: set[str] = field(default_factory=lambda: set[str]())

    # -- the sanitizer -------------------------------------------------------------------------

    def svc(self, method: str, fn: Callable[[], T]) -> T:
        """``fn``, the service call behind ``method`` (a registered method's name, which
        tests/mcp/test_mcp_registry.py checks), with its failures sanitized."""
        if self.token.cancelled:
            raise Interrupted()
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - every failure is sanitized
            if self.token.cancelled:
                raise Interrupted() from None
            if not isinstance(exc, (QueryError, ToolError)):
                try:  # a bug: its traceback is logged
                    log.warning("%s failed", method, exc_info=exc)
                except Exception:  # noqa: BLE001 - a failing logger is a tool failure
                    pass
                raise ToolError(TOOL_FAILED, FAILED_MESSAGE) from None
            # An expected failure is not logged here: the failed call logs one line with this
            # reason (server.py, or the hub's bridge), never a traceback.
            reason = f"{method}: {exc.code} {_one_line(exc.message)}"
            raise ToolError(*sanitize(exc.code), reason=reason) from None
        if self.token.cancelled:
            raise Interrupted()
        return value

    def visible(self, header: dict[str, Any]) -> bool:
        return self.workspace.visible(header.get("cwd"))

    def target(self, arguments: dict[str, Any]) -> str:
        value = arguments.get("session_id")
        if isinstance(value, str):
            return value
        if self.caller is not None:
            return self.caller
        raise ToolError(
            MISSING_CALLER, "session_id is required because no current session is configured"
        )

    def authorize(self, target: str) -> None:
        """One filterSessions listing; a missing and a hidden target take this same path."""
        service = self.runtime.service
        filters = [{"kind": "id", "values": [target]}]
        records = self.svc(
            "sessionQuery/filterSessions", lambda: service.filter_sessions(filters, self.token)
        )
        if len(records) != 1:
            raise not_found(target)
        header = _header(records[0].header)
        if header.get("id") != target or not self.visible(header):
            raise not_found(target)
        self.visible_ids.add(target)

    def recheck(self, raw: Any, target: str) -> dict[str, Any]:
        header = _header(raw)
        if header.get("id") != target or not self.visible(header):
            raise not_found(target)
        return header

    def titles(self, ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """One batch: id -> (text, TITLE keys). UNAUTHORIZED anywhere fails the call."""
        if not ids:
            return {}
        service = self.runtime.service
        results = self.svc("sessionQuery/readTitles", lambda: service.read_titles(ids, self.token))
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for entry in results:
            sid = entry.sessionId
            if entry.status == "fulfilled" and entry.value is not UNSET:
                self.recheck(entry.value.session, sid)
                title = entry.value.title
                if title is UNSET:
                    out[sid] = ("untitled", {"title": None})
                else:
                    text = title.title if isinstance(title.title, str) else "untitled"
                    out[sid] = (text, {"title": text})
            else:
                code = entry.reason.code if entry.reason is not UNSET else TOOL_FAILED
                code = sanitize(code)[0]
                if code == UNAUTHORIZED:
                    raise not_found(sid)
                out[sid] = (
                    f"untitled (title unavailable: {code})",
                    {"title": None, "titleUnavailable": code},
                )
        return out

    # -- records ---------------------------------------------------------------------------------

    def rec(
        self, header: dict[str, Any], live: bool, persisted: bool, title: dict[str, Any]
    ) -> dict[str, Any]:
        parent_id = header.get("parentSession")
        header = dict(header)
        if parent_id is None:
            parent: dict[str, Any] = {"kind": "root"}
        elif isinstance(parent_id, str) and parent_id in self.visible_ids:
            parent = {"kind": "session", "id": parent_id}
        else:
            parent = {"kind": "outside-workspace"}
            del header["parentSession"]
        return {"header": header, "live": live, "persisted": persisted, "parent": parent, **title}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _header(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Header):
        return raw.to_value()
    value = jsoncodec.loads(bytes(raw))
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else js_stringify(value, 0)


def _hit_line(hit: Any) -> str:
    return f"seq {hit.seq} | {_text(hit.type)} | {hit.surface} | {iso_time(hit.time)}"


def _parent_line(rec: dict[str, Any]) -> str:
    parent = rec["parent"]
    if parent["kind"] == "root":
        return "root"
    return parent["id"] if parent["kind"] == "session" else "[outside workspace]"


def _struct(value: Any) -> Any:
    return jsoncodec.to_builtins(value)


def _next_cursor(seen: set[str], cursor: str) -> None:
    if cursor in seen:
        raise ToolError(
            errors.INVALID_CURSOR, "session-search provider repeated a continuation cursor"
        )
    seen.add(cursor)


def _event_filters(
    seqs: tuple[int | None, int | None],
    times: tuple[float | None, float | None],
    types: list[str] | None,
    surfaces: list[str] | None,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for clause in (A.range_clause("seq", *seqs), A.range_clause("time", *times)):
        if clause is not None:
            out.append(clause)
    if types is not None:
        out.append({"kind": "type", "values": types})
    if surfaces is not None:
        out.append({"kind": "surface", "values": surfaces})
    return out


# -- session_event_search ---------------------------------------------------------------------


def session_event_search(call: Call, a: dict[str, Any]) -> Result:
    target = call.target(a)
    call.authorize(target)
    query = A.query_text(a["query"])
    seq_from, seq_to = A.seq_range(a.get("seq_from"), a.get("seq_to"))
    service = call.runtime.service
    if target == call.caller:
        events = call.svc(
            "sessionQuery/listEvents", lambda: service.list_events(target, call.token)
        )
        starts = [e.seq for e in events if e.type == "step/start"]
        if not starts:
            raise ToolError(
                NO_CURRENT_STEP, "current-session search requires an active step boundary"
            )
        seq_to = min(MAX_SEQ if seq_to is None else seq_to, starts[-1] - 1)
    text, title = call.titles([target])[target]
    head = f"Session {target} — {text}"

    def result(hits: list[Any], capped: bool) -> Result:
        structured = {
            "sessionId": target,
            **title,
            "items": [_struct(h) for h in hits],
            "capped": capped,
        }
        if not hits:
            return Result(f"{head}\n\n{NO_EVENTS}", structured)
        lines = [head, "", f"Event search results ({len(hits)}):"]
        for i, hit in enumerate(hits, 1):
            lines += [f"{i}. {_hit_line(hit)}", f"   Snippet: {hit.snippet}"]
        if capped:
            lines += ["", CAP_LINE]
        return Result("\n".join(lines), structured)

    if seq_from is not None and seq_to is not None and seq_from > seq_to:
        return result([], False)
    times = A.stamp_range(a.get("time_from"), a.get("time_to"), "time")
    types = A.nonempty(a.get("event_types"), "event_types")
    surfaces = A.nonempty(a.get("surfaces"), "surfaces")
    filters = _event_filters((seq_from, seq_to), times, types, surfaces)
    request: dict[str, Any] = {"sessionId": target, "query": query, "filters": filters}
    search = call.runtime.search
    hits: list[Any] = []
    capped = False
    seen: set[str] = set()
    while True:
        page = call.svc(
            "sessionQuery/searchEvents",
            lambda: search.search_events(decode(SessionEventSearchRequest, request), call.token),
        )
        call.recheck(page.session, target)
        for hit in page.items:
            if len(hits) == call.max_results:
                capped = True
                break
            hits.append(hit)
        if capped or page.nextCursor is UNSET:
            break
        _next_cursor(seen, page.nextCursor)
        request["cursor"] = page.nextCursor
    return result(hits, capped)


# -- session_trace --------------------------------------------------------------------------------


def session_trace(call: Call, a: dict[str, Any]) -> Result:
    target = call.target(a)
    call.authorize(target)
    service = call.runtime.service
    records: list[Record] = call.svc(
        "sessionQuery/listSessions", lambda: service.corpus(call.token)
    )
    trace = call.svc("sessionQuery/traceSession", lambda: lineage.trace(records, target))
    target_header = call.recheck(trace.target.header, target)
    ancestors: list[Record] = []
    by_id = {r.header.id: r for r in records}
    boundary = False
    for wire_rec in trace.ancestors:
        record = by_id[_header(wire_rec.header)["id"]]
        if not call.workspace.visible(record.header.cwd):
            boundary = True
            break
        ancestors.append(record)
    if not trace.complete:
        boundary = True
    # Descendants in preorder, iteratively; an invisible node is one marker without its subtree.
    groups = lineage.children_index(records)
    nodes: list[tuple[int, Record | None]] = []
    stack: list[tuple[int, Record]] = [(0, r) for r in reversed(groups.get(target, []))]
    while stack:
        depth, record = stack.pop()
        if not call.workspace.visible(record.header.cwd):
            nodes.append((depth, None))
            continue
        nodes.append((depth, record))
        stack.extend((depth + 1, c) for c in reversed(groups.get(record.header.id, [])))
    kept = [r for _, r in nodes if r is not None]
    call.visible_ids.update(r.header.id for r in [*ancestors, *kept])
    call.visible_ids.add(target)
    titles = call.titles(
        list(
            dict.fromkeys([target, *(r.header.id for r in ancestors), *(r.header.id for r in kept)])
        )
    )
    target_rec = call.rec(
        target_header, trace.target.live, trace.target.persisted, titles[target][1]
    )

    def line(record: Record) -> str:
        where = availability(record.live, record.persisted)
        return (
            f"{record.header.id} — {titles[record.header.id][0]} | "
            f"{iso_time(record.header.created_at)} | {where}"
        )

    def rec(record: Record) -> dict[str, Any]:
        return call.rec(
            record.header.to_value(), record.live, record.persisted, titles[record.header.id][1]
        )

    lines = [
        f"Session {target} — {titles[target][0]}",
        f"Created: {iso_time(target_header.get('createdAt'))}",
        f"Availability: {availability(trace.target.live, trace.target.persisted)}",
        "",
        "Ancestors (nearest first):",
    ]
    lines += [f"- {line(r)}" for r in ancestors]
    if boundary:
        lines.append("- [outside workspace boundary]")
    elif not ancestors:
        lines.append("- none (target is a root session)")
    lines += ["", "Descendants:"]
    descendants: list[dict[str, Any]] = []
    for depth, record in nodes:
        pad = "  " * depth
        if record is None:
            lines.append(f"{pad}- [outside workspace subtree]")
            descendants.append({"depth": depth, "outsideWorkspace": True})
        else:
            lines.append(f"{pad}- {line(record)}")
            descendants.append({"depth": depth, "session": rec(record)})
    if not nodes:
        lines.append("- none")
    structured = {
        "target": target_rec,
        "ancestors": [rec(r) for r in ancestors],
        "ancestorBoundary": boundary,
        "descendants": descendants,
    }
    return Result("\n".join(lines), structured)


# -- session_event_trace, session_event_read ------------------------------------------------------


def _seqs(values: list[Any]) -> str:
    return ", ".join(js_number(v) for v in values) if values else "none"


def session_event_trace(call: Call, a: dict[str, Any]) -> Result:
    seq = A.nonneg(a["seq"], "seq")
    assert seq is not None  # required by the tool's input schema
    target = call.target(a)
    call.authorize(target)
    service = call.runtime.service
    obs = call.svc("sessionQuery/traceEvent", lambda: service.trace_event(target, seq, call.token))
    call.recheck(obs.session, target)
    text, title = call.titles([target])[target]
    t = obs.target
    lines = [
        f"Session {target} — {text}",
        f"Target: seq {t.seq} | {_text(t.type)} | {t.surface} | {iso_time(t.time)}",
        f"Replaced by: {'none' if obs.replacedBy is UNSET else obs.replacedBy}",
        f"Replacement chain: {_seqs(obs.replacementChain)}",
        f"Events replaced by target: {_seqs(obs.replacedEventSeqs)}",
        f"Events cited directly as sources: {_seqs(obs.sourceEventSeqs)}",
        f"Direct derived events: {_seqs(obs.derivedEventSeqs)}",
    ]
    structured: dict[str, Any] = {"sessionId": target, **title, "target": _struct(t)}
    if obs.replacedBy is not UNSET:
        structured["replacedBy"] = obs.replacedBy
    structured.update(
        replacementChain=obs.replacementChain,
        replacedEventSeqs=obs.replacedEventSeqs,
        sourceEventSeqs=obs.sourceEventSeqs,
        derivedEventSeqs=obs.derivedEventSeqs,
    )
    return Result("\n".join(lines), structured)


def session_event_read(call: Call, a: dict[str, Any]) -> Result:
    seq = A.nonneg(a["seq"], "seq")
    assert seq is not None  # required by the tool's input schema
    before = A.nonneg(a.get("before"), "before")
    after = A.nonneg(a.get("after"), "after")
    target = call.target(a)
    call.authorize(target)
    service = call.runtime.service
    window = call.svc(
        "sessionQuery/readEvent",
        lambda: service.read_event(
            target,
            seq,
            UNSET if before is None else before,
            UNSET if after is None else after,
            call.token,
        ),
    )
    call.recheck(window.session, target)
    text, title = call.titles([target])[target]
    target_value = jsoncodec.loads(bytes(window.target))
    events = [Event.from_json(bytes(raw)) for raw in window.events]
    neighbours: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for event in events:
        if event.seq == seq:
            continue
        side = "before" if isinstance(event.seq, int) and event.seq < seq else "after"
        neighbours[side].append(
            {"seq": event.seq, "type": event.type, "time": event.time, "text": extract_text(event)}
        )
    lines = [
        f"Session {target} — {text}",
        f"Target event seq {seq}:",
        "```json",
        js_stringify(target_value),
        "```",
    ]
    for side, label in (("before", "Before:"), ("after", "After:")):
        if not neighbours[side]:
            continue
        lines += ["", label]
        for n in neighbours[side]:
            head = f"- seq {n['seq']} | {_text(n['type'])} | {iso_time(n['time'])}"
            if n["text"]:
                lines += [head, indent_text(n["text"])]
            else:
                lines.append(head + " | (no semantic text)")
    structured = {
        "sessionId": target,
        **title,
        "target": target_value,
        "startSeq": window.startSeq,
        "endSeq": window.endSeq,
        **neighbours,
    }
    return Result("\n".join(lines), structured)


# session_search lives in search_tool.py, which adds itself to the table it exports.
RUN: dict[str, Callable[[Call, dict[str, Any]], Result]] = {
    "session_event_search": session_event_search,
    "session_trace": session_trace,
    "session_event_trace": session_event_trace,
    "session_event_read": session_event_read,
}


def pre_scope(name: str, a: dict[str, Any], window_max: int) -> None:
    """The checks that come before the scope step (§1.6)."""
    if name in ("session_event_trace", "session_event_read"):
        A.nonneg(a["seq"], "seq")
    if name == "session_event_read":
        A.window_side(a.get("before"), "before", window_max)
        A.window_side(a.get("after"), "after", window_max)
