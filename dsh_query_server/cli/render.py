"""How client commands print what the server answered: rich tables and trees, or JSON. Session
content is data, never rich markup: every string from the server is escaped."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..client import Client


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_pretty(text: bytes) -> None:
    """JSON text already indented as print_json indents (Client.request_pretty)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text + b"\n")


def when(ms: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(fmt)


def first_line(text: str, width: int = 70, escape: bool = True) -> str:
    line = text.split("\n", 1)[0]
    line = line if len(line) <= width else line[: width - 1] + "…"
    return safe(line) if escape else line


def safe(value: Any) -> str:
    """Session content is data, never rich markup: escape every string we print."""
    from rich.markup import escape

    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def console() -> Any:
    from rich.console import Console

    return Console()


def agent_of(header: dict[str, Any]) -> str:
    """importers.md §0.8: the header's source.agent; dsh's own sessions have no source."""
    source = header.get("source")
    agent = source.get("agent") if isinstance(source, dict) else None
    return agent if isinstance(agent, str) and agent else "dsh"


def show_sessions(
    client: Client,
    as_json: bool,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    limit: int | None = None,
    page: bool = True,
) -> None:
    """One line per session, cut to the terminal; ids as their shortest unique prefix."""
    if as_json and keep is None and limit is None:
        return print_pretty(client.request_pretty("sessionQuery/listSessions"))
    listed = client.request("sessionQuery/listSessions")
    sessions = [r for r in listed if keep is None or keep(r["header"])]
    more = len(sessions) - limit if limit is not None and len(sessions) > limit else 0
    sessions = sessions[:limit] if more else sessions
    if as_json:
        return print_json(sessions)
    from .ids import short_ids
    from .lines import Column, emit, render, terminal_width

    ids = [s["header"]["id"] for s in sessions]
    titles = client.request("sessionQuery/readTitles", {"sessionIds": ids}) if ids else []
    title_of = {
        t["sessionId"]: t.get("value", {}).get("title", {}).get("title", "") for t in titles
    }
    short = short_ids(r["header"]["id"] for r in listed)
    columns = [
        Column("id"),
        Column("agent"),
        Column("created (UTC)"),
        Column("state"),
        Column("title", flexible=True),
        Column("parent", flexible=True),
        Column("cwd", flexible=True),
    ]
    rows = []
    for record in sessions:
        h = record["header"]
        state = "+".join(
            n for n, on in (("live", record["live"]), ("persisted", record["persisted"])) if on
        )
        parent = h.get("parentSession", "")
        rows.append(
            [
                short.get(h["id"], h["id"]),
                agent_of(h),
                when(h.get("createdAt")),
                state,
                first_line(title_of.get(h["id"], ""), 200, escape=False),
                short.get(parent, parent) if isinstance(parent, str) else "",
                str(h.get("cwd", "")),
            ]
        )
    shown = (
        f"{len(sessions)} of {len(listed)}" if len(sessions) != len(listed) else str(len(sessions))
    )
    lines = [f"{shown} sessions (newest first)", *render(columns, rows, terminal_width())]
    if more:
        lines.append(f"… {more} more (--limit N shows more)")
    emit(lines, page)


def show_events(
    client: Client, session_id: str, as_json: bool, limit: int | None = None, page: bool = True
) -> None:
    """One line per event, cut to the terminal, through $PAGER on a terminal."""
    from .lines import Column, emit, render, terminal_width

    events = client.request("sessionQuery/listEvents", {"sessionId": session_id})
    total = len(events)
    events = events[:limit] if limit is not None else events
    if as_json:
        return print_json(events)
    docs = client.request("sessionQuery/filterEvents", {"sessionId": session_id, "filters": []})
    text = {d["seq"]: d["text"] for d in docs}
    day = when(events[0]["time"], "%Y-%m-%d") if events else ""
    columns = [
        Column("seq", right=True),
        Column("type"),
        Column("surface"),
        Column("time"),
        Column("text", flexible=True),
    ]
    rows = [
        [
            str(e["seq"]),
            str(e["type"]),
            str(e["surface"]),
            when(e["time"], "%H:%M:%S"),
            first_line(text.get(e["seq"], ""), 200, escape=False),
        ]
        for e in events
    ]
    lines = [
        f"events of {session_id} ({total}, from {day} UTC)",
        *render(columns, rows, terminal_width()),
    ]
    if len(events) < total:
        lines.append(f"… {total - len(events)} more events (--limit N shows more)")
    emit(lines, page)


def show_lineage(client: Client, session_id: str, as_json: bool) -> None:
    from rich.tree import Tree

    trace = client.request("sessionQuery/traceSession", {"sessionId": session_id})
    if as_json:
        return print_json(trace)

    def label(record: dict[str, Any], target: bool = False) -> str:
        h = record["header"]
        flags = " ".join(
            f for f, on in (("live", record["live"]), ("persisted", record["persisted"])) if on
        )
        name = f"[bold]{safe(h['id'])}[/bold]" if target else safe(h["id"])
        return (
            f"{name} [dim]({flags}{', sub-agent' if h.get('origin') == 'subagent' else ''})[/dim]"
        )

    top: Tree | None = None
    cursor: Tree | None = None
    if not trace["complete"]:
        top = cursor = Tree(
            f"[red]parent {safe(trace['unresolvedParentId'])} is not in the corpus[/red]"
        )
    for record, is_target in [(r, False) for r in reversed(trace["ancestors"])] + [
        (trace["target"], True)
    ]:
        node = (
            Tree(label(record, is_target))
            if cursor is None
            else cursor.add(label(record, is_target))
        )
        top, cursor = top or node, node
    assert cursor is not None  # the target is always there
    stack = [(cursor, trace["descendants"])]
    while stack:
        parent, children = stack.pop()
        for child in children:
            stack.append((parent.add(label(child["session"])), child["descendants"]))
    console().print(top)


def show_event_trace(client: Client, session_id: str, seq: int, as_json: bool) -> None:
    from rich.table import Table

    trace = client.request("sessionQuery/traceEvent", {"sessionId": session_id, "seq": seq})
    if as_json:
        return print_json(trace)
    t = trace["target"]
    table = Table(
        title=f"trace of {safe(session_id)} #{seq}: {safe(t['type'])} ({t['surface']})",
        title_justify="left",
    )
    table.add_column("relationship")
    table.add_column("seqs")
    rows = [
        ("replaced by", [trace["replacedBy"]] if "replacedBy" in trace else []),
        ("replacement chain", trace["replacementChain"]),
        ("replaced events", trace["replacedEventSeqs"]),
        ("sources", trace["sourceEventSeqs"]),
        ("derived events", trace["derivedEventSeqs"]),
    ]
    for name, seqs in rows:
        table.add_row(name, ", ".join(map(str, seqs)) or "—")
    console().print(table)
