"""The client commands: each starts a server over stdio (connect.py), asks it, and prints what it
answered (render.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..config import DEFAULTS, default_index
from .connect import connect, persistence_option
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


def cmd_sessions(args: argparse.Namespace) -> None:
    with connect(args) as client:
        show_sessions(client, args.json)


def cmd_events(args: argparse.Namespace) -> None:
    with connect(args) as client:
        show_events(client, args.session_id, args.json)


def cmd_read(args: argparse.Namespace) -> None:
    with connect(args) as client:
        window = client.request("sessionQuery/readEvent", {"sessionId": args.session_id, "seq": args.seq,
                                                          "before": args.before, "after": args.after})
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
        surface = client.request("sessionQuery/readSurface", {"sessionId": args.session_id})
    if args.json:
        return print_json(surface)
    from rich.table import Table

    table = Table(title=f"surface of {safe(args.session_id)} (through seq {surface['capturedThroughSeq']})",
                  title_justify="left")
    for column in ("seq", "type", "text"):
        table.add_column(column, overflow="fold")
    for event in surface["events"]:
        table.add_row(str(event["seq"]), safe(event["type"]), first_line(extract_text(Event.from_value(event))))
    console().print(table)


def cmd_trace(args: argparse.Namespace) -> None:
    with connect(args) as client:
        if args.seq is None:
            show_lineage(client, args.session_id, args.json)
        else:
            show_event_trace(client, args.session_id, args.seq, args.json)


def cmd_mount(args: argparse.Namespace) -> None:
    args.persistence = ["none"]
    with connect(args) as client:
        mounted = client.request("sessionPersistence/mount", {"uri": _absolute(args.uri)})
        if args.json:
            return print_json({"mount": mounted, "sessions": client.request("sessionQuery/listSessions")})
        console().print(f"mounted [bold]{safe(mounted['uri'])}[/bold] "
                         f"({'writable' if mounted['writable'] else 'read-only'})")
        show_sessions(client, False)


def _absolute(uri: str) -> str:
    from ..persistence.uri import absolute_uri

    return absolute_uri(uri)


def cmd_search(args: argparse.Namespace) -> None:
    from rich.table import Table

    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    from rich.console import Console

    with connect(args, index=cli_index(args.persistence)) as client:
        # The index is brought up to date before every search; the first one over a large store
        # builds it (about 6 s per million events), so say what is happening (on stderr).
        with Console(stderr=True).status("searching (updating the index first)…", spinner="dots"):
            if args.session:
                params["sessionId"] = args.session
                page = client.request("sessionQuery/searchEvents", params)
                hits = [(args.session, h) for h in page["items"]]
            else:
                page = client.request("sessionQuery/searchSessions", params)
                hits = [(h["header"]["id"], h["bestMatch"]) for h in page["items"]]
    if args.json:
        return print_json(page)
    table = Table(title=f'search "{safe(args.query)}"', title_justify="left")
    for column in ("session", "seq", "type", "surface", "snippet"):
        table.add_column(column, overflow="fold")
    for sid, hit in hits:
        table.add_row(safe(sid), str(hit["seq"]), safe(hit["type"]), hit["surface"], safe(hit["snippet"]))
    out = console()
    out.print(table)
    if "nextCursor" in page:
        out.print(f"[dim]next page: --cursor {page['nextCursor']}[/dim]")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser("sessions", parents=[common], help="list sessions").set_defaults(func=cmd_sessions)
    events = sub.add_parser("events", parents=[common], help="list a session's events with surface status")
    events.add_argument("session_id")
    events.set_defaults(func=cmd_events)
    read = sub.add_parser("read", parents=[common], help="read an event window")
    read.add_argument("session_id")
    read.add_argument("seq", type=int)
    read.add_argument("--before", type=int, default=0)
    read.add_argument("--after", type=int, default=0)
    read.set_defaults(func=cmd_read)
    surface = sub.add_parser("surface", parents=[common], help="the model's current context of a session")
    surface.add_argument("session_id")
    surface.set_defaults(func=cmd_surface)
    trace = sub.add_parser("trace", parents=[common], help="lineage of a session, or the trace of one event")
    trace.add_argument("session_id")
    trace.add_argument("seq", type=int, nargs="?")
    trace.set_defaults(func=cmd_trace)
    mount = sub.add_parser("mount", parents=[common], help="mount a backend and list what it holds")
    mount.add_argument("uri")
    mount.set_defaults(func=cmd_mount)
    search = sub.add_parser("search", parents=[common], help="full-text search")
    search.add_argument("query")
    search.add_argument("--session", metavar="ID", help="search within one session")
    search.add_argument("--limit", type=int, default=DEFAULTS.search.default_limit)
    search.add_argument("--cursor", help="continue from a previous page")
    search.set_defaults(func=cmd_search)
