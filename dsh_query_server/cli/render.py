"""How client commands print what the server answered: rich tables and trees, or JSON. Session
content is data, never rich markup: every string from the server is escaped."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

from ..client import StdioClient


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def when(ms: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(fmt)


def first_line(text: str, width: int = 70) -> str:
    line = text.split("\n", 1)[0]
    return safe(line if len(line) <= width else line[: width - 1] + "…")


def safe(value: Any) -> str:
    """Session content is data, never rich markup: escape every string we print."""
    from rich.markup import escape

    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def console() -> Any:
    from rich.console import Console

    return Console()


def show_sessions(client: StdioClient, as_json: bool) -> None:
    from rich.table import Table

    sessions = client.request("sessionQuery/listSessions")
    titles = client.request("sessionQuery/readTitles", {"sessionIds": [s["header"]["id"] for s in sessions]})
    title_of = {t["sessionId"]: t.get("value", {}).get("title", {}).get("title", "") for t in titles}
    if as_json:
        return print_json(sessions)
    table = Table(title=f"{len(sessions)} sessions (newest first)", title_justify="left")
    table.add_column("id", overflow="fold", style="bold")
    table.add_column("title", overflow="fold")
    table.add_column("created (UTC)", no_wrap=True)
    table.add_column("state", no_wrap=True)
    table.add_column("parent", overflow="fold")
    table.add_column("cwd", overflow="fold", style="dim")
    for record in sessions:
        h = record["header"]
        state = "+".join(n for n, on in (("live", record["live"]), ("persisted", record["persisted"])) if on)
        table.add_row(safe(h["id"]), safe(title_of.get(h["id"], "")), when(h.get("createdAt")), state,
                      safe(h.get("parentSession", "")), safe(h.get("cwd", "")))
    console().print(table)


def show_events(client: StdioClient, session_id: str, as_json: bool) -> None:
    from rich.table import Table

    events = client.request("sessionQuery/listEvents", {"sessionId": session_id})
    if as_json:
        return print_json(events)
    docs = client.request("sessionQuery/filterEvents", {"sessionId": session_id, "filters": []})
    text = {d["seq"]: d["text"] for d in docs}
    style = {"current": "bold green", "shadowed": "yellow", "log-only": "dim"}
    day = when(events[0]["time"], "%Y-%m-%d") if events else ""
    table = Table(title=f"events of {safe(session_id)} ({len(events)}, from {day} UTC)", title_justify="left")
    table.add_column("seq", justify="right")
    table.add_column("type", no_wrap=True)
    table.add_column("surface", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("text", overflow="fold")
    for e in events:
        table.add_row(str(e["seq"]), safe(e["type"]), f"[{style.get(e['surface'], '')}]{e['surface']}",
                      when(e["time"], "%H:%M:%S"), first_line(text.get(e["seq"], ""), 60))
    console().print(table)


def show_lineage(client: StdioClient, session_id: str, as_json: bool) -> None:
    from rich.tree import Tree

    trace = client.request("sessionQuery/traceSession", {"sessionId": session_id})
    if as_json:
        return print_json(trace)

    def label(record: dict[str, Any], target: bool = False) -> str:
        h = record["header"]
        flags = " ".join(f for f, on in (("live", record["live"]), ("persisted", record["persisted"])) if on)
        name = f"[bold]{safe(h['id'])}[/bold]" if target else safe(h["id"])
        return f"{name} [dim]({flags}{', sub-agent' if h.get('origin') == 'subagent' else ''})[/dim]"

    top: Tree | None = None
    cursor: Tree | None = None
    if not trace["complete"]:
        top = cursor = Tree(f"[red]parent {safe(trace['unresolvedParentId'])} is not in the corpus[/red]")
    for record, is_target in [(r, False) for r in reversed(trace["ancestors"])] + [(trace["target"], True)]:
        node = Tree(label(record, is_target)) if cursor is None else cursor.add(label(record, is_target))
        top, cursor = top or node, node
    assert cursor is not None  # the target is always there
    stack = [(cursor, trace["descendants"])]
    while stack:
        parent, children = stack.pop()
        for child in children:
            stack.append((parent.add(label(child["session"])), child["descendants"]))
    console().print(top)


def show_event_trace(client: StdioClient, session_id: str, seq: int, as_json: bool) -> None:
    from rich.table import Table

    trace = client.request("sessionQuery/traceEvent", {"sessionId": session_id, "seq": seq})
    if as_json:
        return print_json(trace)
    t = trace["target"]
    table = Table(title=f"trace of {safe(session_id)} #{seq}: {safe(t['type'])} ({t['surface']})",
                  title_justify="left")
    table.add_column("relationship")
    table.add_column("seqs")
    rows = [("replaced by", [trace["replacedBy"]] if "replacedBy" in trace else []),
            ("replacement chain", trace["replacementChain"]), ("replaced events", trace["replacedEventSeqs"]),
            ("sources", trace["sourceEventSeqs"]), ("derived events", trace["derivedEventSeqs"])]
    for name, seqs in rows:
        table.add_row(name, ", ".join(map(str, seqs)) or "—")
    console().print(table)
