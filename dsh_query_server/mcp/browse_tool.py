"""``session_list`` and ``session_read`` (tools.md §1.6) **[ours]**: what an agent needs before it
has a query, the recent sessions of its workspace and a bounded window of one transcript; and
the note every empty answer carries about the workspace in effect.

Both are read-only and scoped like the other tools: one listing decides what is visible, a
target is pre-authorized (a missing and a hidden id answer alike), and no hidden id is named.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..model.event import Event
from ..model.text import extract_text
from ..query.loaded import Loaded, LoadedWindow, Record
from . import args as A
from .args import ToolError
from .render import indent_text, iso_time
from .tools import Call, Result, _text

NO_DATA_CHARS = 300  # an event without text shows this much of its data
CUT_NOTE = "… [cut: {rest} more characters; session_event_read with seq {seq} reads it whole]"


# -- the workspace in effect ------------------------------------------------------------------


def workspace_line(call: Call) -> str:
    roots = ", ".join(call.workspace.roots) or "(no directory)"
    source = f" (from {call.workspace.source})" if call.workspace.source else ""
    return f"Workspace: {roots}{source}"


def workspace_value(call: Call, visible: int) -> dict[str, Any]:
    value: dict[str, Any] = {"roots": list(call.workspace.roots), "visibleSessions": visible}
    if call.workspace.source:
        value["source"] = call.workspace.source
    return value


def visible_records(call: Call) -> list[Record]:
    """One listing, the visible records of it (their ids become visible to the call)."""
    service = call.runtime.service
    with call.token.counting(share=False):  # the titles read next own the percentage
        records: list[Record] = call.svc(
            "sessionQuery/listSessions", lambda: service.corpus(call.token)
        )
    visible = [r for r in records if call.workspace.visible(r.header.cwd)]
    call.visible_ids.update(r.header.id for r in visible)
    return visible


def empty_note(call: Call, count: int | None = None) -> tuple[list[str], dict[str, Any]]:
    """What an answer with nothing in it adds: how many sessions the workspace shows and which
    workspace that is, so an agent can tell "no match" from "nothing visible". ``count`` is the
    number of visible sessions when the caller has listed them already."""
    if count is None:
        count = len(visible_records(call))
    noun = "session is" if count == 1 else "sessions are"
    lines = [f"{workspace_line(call)}; {count} {noun} visible there."]
    if count == 0:
        lines.append(
            "No session is visible in this workspace: the server's --workspace (else the "
            "directory it was started in) decides which sessions it shows."
        )
    return lines, workspace_value(call, count)


# -- session_list ------------------------------------------------------------------------------


def _agent(header: dict[str, Any]) -> str:
    """The agent that wrote a session (importers.md §0.8): ``source.agent``, else dsh."""
    source = header.get("source")
    if source is None:
        return "dsh"
    agent = source.get("agent") if isinstance(source, dict) else None
    return agent if isinstance(agent, str) and agent else "unknown"


def _agent_matches(agent: str, wanted: str) -> bool:
    # `claude` names claude-code, `gemini` gemini-cli, as the command line's --agent does.
    return agent == wanted or agent.startswith(wanted + "-")


def _since(value: object) -> int | None:
    if value is None:
        return None
    try:
        return A.parse_stamp(str(value), "since")[0]
    except ToolError:
        raise ToolError(
            A.INVALID_FILTER,
            "since must be an ISO 8601 timestamp with Z or a numeric offset, such as "
            "2026-01-31T00:00:00Z",
        ) from None


def _created(record: Record) -> float:
    created = record.header.created_at
    return float(created) if isinstance(created, (int, float)) else float("-inf")


def _event_count(call: Call, sid: str) -> int | None:
    """The session's event count, or None when it cannot be read (the listing still answers).
    An empty window's load (readEvent's) has the whole load's errors and length but reads no
    event: a backend that verified the log at its revision (the title read just did) answers
    from that, so a page costs no full read of its logs."""
    loader = call.runtime.service.loader
    try:
        window: LoadedWindow = call.svc(
            "sessionQuery/readEvent", lambda: loader.load_window(sid, 0, -1, call.token)
        )
    except ToolError:
        return None
    return window.length


def session_list(call: Call, a: dict[str, Any]) -> Result:
    limit = A.bounded(a.get("limit"), "limit", 1, A.LIST_LIMIT_MAX) or A.LIST_LIMIT_DEFAULT
    agent = a.get("agent")
    wanted = agent.strip().lower() if isinstance(agent, str) else None
    if wanted == "":
        raise ToolError(A.INVALID_FILTER, "agent must name an agent, such as claude-code")
    since = _since(a.get("since"))
    visible = visible_records(call)
    matching = [
        r
        for r in visible
        if (wanted is None or _agent_matches(_agent(r.header.to_value()), wanted))
        and (since is None or _created(r) >= since)
    ]
    matching.sort(key=lambda r: (-_created(r), r.header.id))
    page = matching[:limit]
    structured: dict[str, Any] = {
        "workspace": workspace_value(call, len(visible)),
        "total": len(matching),
        "items": [],
    }
    if not page:
        lines, _ = empty_note(call, len(visible))
        return Result("\n".join(["No session matches.", *lines]), structured)
    titles = call.titles([r.header.id for r in page])
    lines = [
        f"Recent sessions ({len(page)} of {len(matching)}, newest first):",
        workspace_line(call),
    ]
    for i, record in enumerate(page, 1):
        header = record.header.to_value()
        sid = record.header.id
        text, title = titles[sid]
        count = _event_count(call, sid)
        parent = header.get("parentSession")
        if parent is None:
            parent_text, parent_value = "root", {"kind": "root"}
        elif parent in call.visible_ids:
            parent_text, parent_value = str(parent), {"kind": "session", "id": parent}
        else:  # a hidden parent is never named
            parent_text, parent_value = "[outside workspace]", {"kind": "outside-workspace"}
        mine = " (this session)" if sid == call.caller else ""
        lines += [
            "",
            f"{i}. Session {sid} — {text}{mine}",
            f"   Agent: {_agent(header)} | Created: {iso_time(header.get('createdAt'))} | "
            f"Events: {'unavailable' if count is None else count}",
            f"   Cwd: {header.get('cwd')}",
            f"   Parent: {parent_text}",
        ]
        item: dict[str, Any] = {
            "id": sid,
            **title,
            "agent": _agent(header),
            "createdAt": header.get("createdAt"),
            "cwd": header.get("cwd"),
            "eventCount": count,
            "parent": parent_value,
        }
        structured["items"].append(item)
    if len(matching) > len(page):
        rest = len(matching) - len(page)
        lines += [
            "",
            f"{rest} more: raise limit (at most {A.LIST_LIMIT_MAX}) or narrow with agent or since.",
        ]
    return Result("\n".join(lines), structured)


# -- session_read ------------------------------------------------------------------------------


def _data_text(event: Event) -> str:
    """An event without text: its data, compact and cut, so a tool call still says what ran."""
    data = event.data()
    if data is None:
        return "(no text)"
    compact = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(compact) > NO_DATA_CHARS:
        compact = compact[:NO_DATA_CHARS] + "…"
    return f"(no text) {compact}"


def _run_end(events: Sequence[Event], classes: list[str], seq: int) -> int:
    """The last seq of the run that starts at ``seq``: following events of the same type and
    class without text (a message's streamed chunks), shown as one entry."""
    first = events[seq]
    end = seq
    while (
        end + 1 < len(events)
        and events[end + 1].type == first.type
        and classes[end + 1] == classes[seq]
        and not extract_text(events[end + 1])
    ):
        end += 1
    return end


def session_read(call: Call, a: dict[str, Any]) -> Result:
    seq_from = A.nonneg(a.get("seq_from"), "seq_from") or 0
    budget = (
        A.bounded(a.get("max_chars"), "max_chars", A.READ_CHARS_MIN, A.READ_CHARS_MAX)
        or A.READ_CHARS_DEFAULT
    )
    target = call.target(a)
    call.authorize(target)
    service = call.runtime.service

    def load() -> tuple[Loaded, list[str]]:
        loaded = service.load(target, call.token)
        return loaded, list(loaded.fold().classes())

    loaded, classes = call.svc("sessionQuery/readSession", load)
    call.recheck(loaded.header, target)
    text, title = call.titles([target])[target]
    total = len(loaded.events)
    head = [f"Session {target} — {text}"]
    structured: dict[str, Any] = {"sessionId": target, **title, "eventCount": total}
    if seq_from >= total:
        last = f"seq 0–{total - 1}" if total else "none"
        head.append(f"No events from seq {seq_from}: the session has {total} events ({last}).")
        return Result("\n".join(head), {**structured, "events": []})
    entries: list[str] = []
    events: list[dict[str, Any]] = []
    used = 0
    seq = seq_from
    while seq < total:
        event = loaded.events[seq]
        text_value = extract_text(event)
        last = seq if text_value else _run_end(loaded.events, classes, seq)
        where = f"#{seq}" if last == seq else f"#{seq}–#{last}"
        line = f"{where} | {_text(event.type)} | {classes[seq]} | {iso_time(event.time)}"
        if last > seq:
            body = f"({last - seq + 1} events without text, through {iso_time(loaded.events[last].time)})"
        else:
            body = text_value or _data_text(event)
        size = len(line) + len(body) + 4
        cut = 0
        if used + size > budget:
            if entries:
                break
            room = max(0, budget - used - len(line) - 4)
            cut = len(body) - room
            body = body[:room] + CUT_NOTE.format(rest=cut, seq=seq)
        entries.append(line + "\n" + indent_text(body))
        value: dict[str, Any] = {
            "seq": seq,
            "type": event.type,
            "time": event.time,
            "class": classes[seq],
            "text": body,
        }
        if last > seq:
            value["throughSeq"] = last
        if cut:
            value["cut"] = cut
        events.append(value)
        used += size
        seq = last + 1
        if cut:
            break
    end = seq - 1
    head.append(
        f"Events {seq_from}–{end} of {total} (class: current = on the surface, shadowed = "
        "replaced later, log-only = never on the surface)"
    )
    tail = (
        f"More: session_read with seq_from {seq} (events {seq}–{total - 1} remain)."
        if seq < total
        else "End of session."
    )
    structured.update(startSeq=seq_from, endSeq=end, events=events)
    if seq < total:
        structured["nextSeq"] = seq
    return Result("\n".join([*head, "", "\n\n".join(entries), "", tail]), structured)


RUN = {"session_list": session_list, "session_read": session_read}
