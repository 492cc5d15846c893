"""The client commands: each starts a server over stdio (connect.py), asks it, and prints what it
answered (render.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..client import StdioClient
from ..config import DEFAULTS, default_index
from .connect import connect, persistence_option
from .filters import session_filter, since_ms
from .ids import resolve_id, short_ids
from .render import (
    console,
    first_line,
    print_json,
    safe,
    show_event_trace,
    show_events,
    show_lineage,
    show_sessions,
)


def cli_index(persistence: str | list[str] | None) -> str:
    """The command line's own search index for a store (``--persistence`` as given, once or
    repeated): an index is never shared with a running server, which uses the ``index`` prefix."""
    values = [persistence] if isinstance(persistence, str) else persistence
    return default_index(persistence_option(values), prefix="cli-index")


def session_arg(client: StdioClient, text: str) -> str:
    """An id or its unique prefix (ids.py) as the id the server knows."""
    listed = client.request("sessionQuery/listSessions")
    return resolve_id(text, (r["header"]["id"] for r in listed))


def cmd_sessions(args: argparse.Namespace) -> None:
    keep = session_filter(args.agent, args.cwd, args.since)
    with connect(args) as client:
        show_sessions(client, args.json, keep, args.limit)


def cmd_events(args: argparse.Namespace) -> None:
    with connect(args) as client:
        show_events(client, session_arg(client, args.session_id), args.json, args.limit)


def cmd_read(args: argparse.Namespace) -> None:
    with connect(args) as client:
        args.session_id = session_arg(client, args.session_id)
        window = client.request(
            "sessionQuery/readEvent",
            {
                "sessionId": args.session_id,
                "seq": args.seq,
                "before": args.before,
                "after": args.after,
            },
        )
    if args.json:
        return print_json(window)
    out = console()
    for event in window["events"]:
        marker = "▶ target" if event.get("seq") == args.seq else ""
        out.rule(f"#{event.get('seq')} {safe(event.get('type'))} {marker}")
        out.print_json(json.dumps(event, ensure_ascii=False))


def cmd_surface(args: argparse.Namespace) -> None:
    from ..model.event import Event
    from ..query.text import extract_text

    with connect(args) as client:
        args.session_id = session_arg(client, args.session_id)
        surface = client.request("sessionQuery/readSurface", {"sessionId": args.session_id})
    if args.json:
        return print_json(surface)
    from rich.table import Table

    table = Table(
        title=f"surface of {safe(args.session_id)} (through seq {surface['capturedThroughSeq']})",
        title_justify="left",
    )
    for column in ("seq", "type", "text"):
        table.add_column(column, overflow="fold")
    for event in surface["events"]:
        table.add_row(
            str(event["seq"]),
            safe(event["type"]),
            first_line(extract_text(Event.from_value(event))),
        )
    console().print(table)


def cmd_trace(args: argparse.Namespace) -> None:
    with connect(args) as client:
        args.session_id = session_arg(client, args.session_id)
        if args.seq is None:
            show_lineage(client, args.session_id, args.json)
        else:
            show_event_trace(client, args.session_id, args.seq, args.json)


def cmd_mount(args: argparse.Namespace) -> None:
    args.persistence = ["none"]
    uris = [_absolute(u) for u in args.uri]
    with connect(args) as client:
        mounted = client.request(
            "sessionPersistence/mount", {"uri": uris[0] if len(uris) == 1 else uris}
        )
        if args.json:
            return print_json(
                {"mount": mounted, "sessions": client.request("sessionQuery/listSessions")}
            )
        shown = mounted["uri"] if isinstance(mounted["uri"], str) else " + ".join(mounted["uri"])
        console().print(
            f"mounted [bold]{safe(shown)}[/bold] "
            f"({'writable' if mounted['writable'] else 'read-only'})"
        )
        show_sessions(client, False)


def _absolute(uri: str) -> str:
    from ..persistence.mount.uri import absolute_uri

    return uri if uri == "auto" else absolute_uri(uri)


def cmd_search(args: argparse.Namespace) -> None:
    from rich.console import Console

    from .lines import Column, emit, render, terminal_width

    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    with connect(args, index=cli_index(args.persistence)) as client:
        listed = [r["header"]["id"] for r in client.request("sessionQuery/listSessions")]
        # The index is brought up to date before every search; the first one over a large store
        # builds it (about 6 s per million events), so say what is happening (on stderr).
        with Console(stderr=True).status("searching (updating the index first)…", spinner="dots"):
            if args.session:
                params["sessionId"] = resolve_id(args.session, listed)
                page = client.request("sessionQuery/searchEvents", params)
                hits = [(params["sessionId"], h) for h in page["items"]]
            else:
                page = client.request("sessionQuery/searchSessions", params)
                hits = [(h["header"]["id"], h["bestMatch"]) for h in page["items"]]
    if args.json:
        return print_json(page)
    short = short_ids(listed)
    columns = [
        Column("session"),
        Column("seq", right=True),
        Column("type"),
        Column("surface"),
        Column("snippet", flexible=True),
    ]
    rows = [
        [
            short.get(sid, sid),
            str(hit["seq"]),
            str(hit["type"]),
            str(hit["surface"]),
            first_line(str(hit["snippet"]), 400, escape=False),
        ]
        for sid, hit in hits
    ]
    lines = [f'search "{args.query}": {len(hits)} hits', *render(columns, rows, terminal_width())]
    if "nextCursor" in page:
        lines.append(f"next page: --cursor {page['nextCursor']}")
    emit(lines)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sessions = sub.add_parser("sessions", parents=[common], help="list sessions, one line each")
    sessions.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="only this agent's sessions: dsh, claude-code (or claude), codex, gemini-cli (or "
        "gemini), opencode, copilot-cli (or copilot), qwen-code (or qwen); repeatable",
    )
    sessions.add_argument("--cwd", metavar="DIR", help="only sessions whose cwd is DIR or below it")
    sessions.add_argument(
        "--since",
        metavar="WHEN",
        type=since_ms,
        help="only sessions created since WHEN: 30m, 12h, 7d, 2w or an ISO date (UTC)",
    )
    sessions.add_argument("--limit", type=int, metavar="N", help="show at most N sessions")
    sessions.set_defaults(func=cmd_sessions)
    events = sub.add_parser(
        "events",
        parents=[common],
        help="list a session's events with surface status (through $PAGER on a terminal)",
    )
    events.add_argument("session_id", help="a session id or its unique prefix")
    events.add_argument("--limit", type=int, metavar="N", help="show the first N events only")
    events.set_defaults(func=cmd_events)
    read = sub.add_parser("read", parents=[common], help="read an event window")
    read.add_argument("session_id")
    read.add_argument("seq", type=int)
    read.add_argument("--before", type=int, default=0)
    read.add_argument("--after", type=int, default=0)
    read.set_defaults(func=cmd_read)
    surface = sub.add_parser(
        "surface", parents=[common], help="the model's current context of a session"
    )
    surface.add_argument("session_id")
    surface.set_defaults(func=cmd_surface)
    trace = sub.add_parser(
        "trace", parents=[common], help="lineage of a session, or the trace of one event"
    )
    trace.add_argument("session_id")
    trace.add_argument("seq", type=int, nargs="?")
    trace.set_defaults(func=cmd_trace)
    mount = sub.add_parser("mount", parents=[common], help="mount a backend and list what it holds")
    mount.add_argument("uri", nargs="+", help="one URI, several (mounted as one), or auto")
    mount.set_defaults(func=cmd_mount)
    search = sub.add_parser("search", parents=[common], help="full-text search")
    search.add_argument("query")
    search.add_argument(
        "--session", metavar="ID", help="search within one session (an id or its prefix)"
    )
    search.add_argument("--limit", type=int, default=DEFAULTS.search.default_limit)
    search.add_argument("--cursor", help="continue from a previous page")
    search.set_defaults(func=cmd_search)
