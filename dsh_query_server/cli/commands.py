"""The client commands: each asks the hub of its configuration, or with ``--no-hub`` a server of
its own (opening.py), and prints what it answered (render.py, events.py, search.py)."""

from __future__ import annotations

import argparse
from typing import Any

from . import search, style
from .connect import connect, persistence_option, uses_hub
from .filters import SURFACES, event_filter, session_filter, since_ms
from .opening import open_client

# What a command shows is imported by the command (render.py, events.py): the parser of every
# command here is built for any one of them.


def cli_index(persistence: str | list[str] | None) -> str:
    """A private server's search index for a store (``--persistence`` as given, once or
    repeated); through the hub, a command searches the hub's index."""
    from ..resolve import default_index

    values = [persistence] if isinstance(persistence, str) else persistence
    return default_index(persistence_option(values), prefix="cli-index")


def cmd_sessions(args: argparse.Namespace) -> None:
    from .render import show_sessions

    keep = session_filter(args.agent, args.cwd, args.since)
    with open_client(args) as client:
        show_sessions(client, args.json, keep, args.limit)


def cmd_events(args: argparse.Namespace) -> None:
    from .events import show_events
    from .render import on_session

    keep, said = event_filter(args.type, args.skip_type, args.event_class)
    with open_client(args) as client:
        on_session(
            client,
            args.session_id,
            args.json,
            lambda sid, name: show_events(
                client, sid, args.json, args.limit, keep=keep, kept=said, name=name
            ),
        )


def cmd_read(args: argparse.Namespace) -> None:
    from .events import show_read
    from .render import on_session

    with open_client(args) as client:
        on_session(
            client,
            args.session_id,
            args.json,
            lambda sid, _: show_read(client, sid, args.seq, args.before, args.after, args.json),
        )


def cmd_surface(args: argparse.Namespace) -> None:
    from .events import show_surface
    from .render import on_session

    with open_client(args) as client:
        on_session(
            client,
            args.session_id,
            args.json,
            lambda sid, name: show_surface(client, sid, args.json, args.full, name=name),
        )


def cmd_trace(args: argparse.Namespace) -> None:
    from .render import on_session, show_event_trace, show_lineage

    with open_client(args) as client:
        if args.seq is None:
            on_session(
                client,
                args.session_id,
                args.json,
                lambda sid, _: show_lineage(client, sid, args.json),
            )
        else:
            on_session(
                client,
                args.session_id,
                args.json,
                lambda sid, name: show_event_trace(client, sid, args.seq, args.json, name=name),
            )


def cmd_mount(args: argparse.Namespace) -> None:
    from .render import print_json, safe, show_sessions
    from .stores import refuse_wrong

    style.set_mode(args.color)
    refuse_wrong(args.uri)
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
        style.console().print(
            f"mounted [bold]{safe(shown)}[/bold] "
            f"({'writable' if mounted['writable'] else 'read-only'})"
        )
        show_sessions(client, False)


def cmd_search(args: argparse.Namespace) -> None:
    init: dict[str, Any] = {} if uses_hub(args) else {"index": cli_index(args.persistence)}
    with open_client(args, **init) as client:
        search.run(client, args)


def _absolute(uri: str) -> str:
    from ..resolve import absolute_uri

    return uri if uri == "auto" else absolute_uri(uri)


_ID_HELP = "a session id, its short form as listed, or a unique prefix"


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    output = argparse.ArgumentParser(add_help=False)
    style.add_option(output)
    parents = [common, output]
    sessions = sub.add_parser(
        "sessions",
        parents=parents,
        help="list sessions, one line each",
        description="List sessions, newest first, one line each (fitted to the terminal). "
        "--json gives the server's records with each session's title.",
    )
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
        parents=parents,
        help="list a session's events with their class (through $PAGER on a terminal)",
        description="List a session's events, one line each: seq, type, class (current, "
        "shadowed or log-only), time and text (a tool call as its command or arguments). "
        "--json gives the records with the same text, uncut.",
    )
    events.add_argument("session_id", help=_ID_HELP)
    events.add_argument("--limit", type=int, metavar="N", help="show the first N events only")
    events.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="only events of this type; a pattern such as 'tool/*' works; repeatable",
    )
    events.add_argument(
        "--skip-type",
        action="append",
        metavar="TYPE",
        help="leave out events of this type (e.g. 'claude/progress'); repeatable",
    )
    events.add_argument(
        "--class",
        dest="event_class",
        action="append",
        choices=SURFACES,
        help="only events of this class; repeatable",
    )
    events.set_defaults(func=cmd_events)

    read = sub.add_parser(
        "read",
        parents=parents,
        help="read whole events around one, each with its class",
        description="Print events SEQ-BEFORE..SEQ+AFTER of a session whole (as JSON), each "
        "headed by its seq, type and class (current, shadowed or log-only).",
    )
    read.add_argument("session_id", help=_ID_HELP)
    read.add_argument("seq", type=int, help="the event to read")
    read.add_argument(
        "--before", type=int, default=0, metavar="N", help="also N events before it (max 50)"
    )
    read.add_argument(
        "--after", type=int, default=0, metavar="N", help="also N events after it (max 50)"
    )
    read.set_defaults(func=cmd_read)

    surface = sub.add_parser(
        "surface",
        parents=parents,
        help="the model's current context of a session",
        description="The events the model has in context now (the current surface), one line "
        "each, or whole with --full.",
    )
    surface.add_argument("session_id", help=_ID_HELP)
    surface.add_argument("--full", action="store_true", help="print every message whole, uncut")
    surface.set_defaults(func=cmd_surface)

    trace = sub.add_parser(
        "trace",
        parents=parents,
        help="lineage of a session, or the trace of one event",
        description="Without SEQ: the session's lineage tree (parents, forks, sub-agents). "
        "With SEQ: what replaced that event, what it replaced, its sources and what was "
        "derived from it, as seq ranges.",
    )
    trace.add_argument("session_id", help=_ID_HELP)
    trace.add_argument("seq", type=int, nargs="?", help="an event of the session")
    trace.set_defaults(func=cmd_trace)

    mount = sub.add_parser(
        "mount",
        parents=parents,
        help="mount a backend and list what it holds",
        description="Mount one store, several as one, or auto, in a server of this command, "
        "and list the sessions it holds.",
    )
    mount.add_argument(
        "uri",
        nargs="+",
        help="one URI (jsonl:<root>, sqlite:<file>, claude:<home>, codex:<home>), several "
        "(mounted as one), or auto",
    )
    mount.set_defaults(func=cmd_mount)
    search.register(sub, [common, output], cmd_search)
