"""The client commands: each asks the hub of its configuration, or with ``--no-hub`` a server of
its own over stdio (connect.py), and prints what it answered (render.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..client import Client
from ..resolve import DEFAULT_LIMIT, default_index
from .connect import connect, persistence_option, uses_hub
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
    """A private server's search index for a store (``--persistence`` as given, once or
    repeated); through the hub, a command searches the hub's index."""
    values = [persistence] if isinstance(persistence, str) else persistence
    return default_index(persistence_option(values), prefix="cli-index")


def session_arg(client: Client, text: str) -> str:
    """An id or its unique prefix (ids.py) as the id the server knows."""
    listed = client.request("sessionQuery/listSessions")
    return resolve_id(text, (r["header"]["id"] for r in listed))


NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"


def session_request(
    client: Client, text: str, method: str, params: dict[str, Any]
) -> tuple[str, Any]:
    """(id, result) of ``method`` on the session ``text`` names: an exact id is asked directly;
    only a text the server does not know as an id is resolved as a prefix (a listing)."""
    from ..client import RpcError

    try:
        return text, client.request(method, {**params, "sessionId": text})
    except RpcError as exc:
        if exc.data_code != NOT_FOUND:
            raise
        session_id = session_arg(client, text)
        if session_id == text:
            raise
    return session_id, client.request(method, {**params, "sessionId": session_id})


def cmd_sessions(args: argparse.Namespace) -> None:
    keep = session_filter(args.agent, args.cwd, args.since)
    with connect(args) as client:
        show_sessions(client, args.json, keep, args.limit)


def cmd_events(args: argparse.Namespace) -> None:
    with connect(args) as client:
        show_events(client, session_arg(client, args.session_id), args.json, args.limit)


def cmd_read(args: argparse.Namespace) -> None:
    with connect(args) as client:
        params = {"seq": args.seq, "before": args.before, "after": args.after}
        args.session_id, window = session_request(
            client, args.session_id, "sessionQuery/readEvent", params
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
        args.session_id, surface = session_request(
            client, args.session_id, "sessionQuery/readSurface", {}
        )
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
    # A private server: mounting on a hub would change what every client of it sees.
    with connect(args, private=True) as client:
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
    from ..resolve import absolute_uri

    return uri if uri == "auto" else absolute_uri(uri)


def cmd_search(args: argparse.Namespace) -> None:
    import contextlib
    import sys

    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    init: dict[str, Any] = {} if uses_hub(args) else {"index": cli_index(args.persistence)}
    listed: list[str] | None = None
    with connect(args, **init) as client:
        # The index is brought up to date before every search; the first one over a large store
        # builds it (about 6 s per million events), so say what is happening (on a terminal).
        waiting: Any = contextlib.nullcontext()
        if sys.stderr.isatty():
            from rich.console import Console

            waiting = Console(stderr=True).status("searching (updating the index first)…")
        with waiting:
            if args.session:
                args.session, page = session_request(
                    client, args.session, "sessionQuery/searchEvents", params
                )
                hits = [(args.session, h) for h in page["items"]]
            else:
                page = client.request("sessionQuery/searchSessions", params)
                hits = [(h["header"]["id"], h["bestMatch"]) for h in page["items"]]
        if not args.json:  # ids are shown as their shortest unique prefix among all
            listed = [r["header"]["id"] for r in client.request("sessionQuery/listSessions")]
    if args.json or listed is None:
        return print_json(page)
    from .lines import Column, emit, render, terminal_width

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
        help="only this agent's sessions: dsh, claude-code (or claude), codex; repeatable",
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
    search.add_argument("--limit", type=int, default=DEFAULT_LIMIT)
    search.add_argument("--cursor", help="continue from a previous page")
    search.set_defaults(func=cmd_search)
