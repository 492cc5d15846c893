"""The ``dsh-query`` command line: ``serve``, ``demo``, and client commands that script a server
over stdio. Output is a table or tree by default and JSON with ``--json``."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
from datetime import datetime, timezone
from typing import Any, Iterator

from . import __version__


def _serve_options(args: argparse.Namespace) -> dict[str, Any]:
    from .persistence.uri import absolute_uri

    options: dict[str, Any] = {}
    if args.persistence is not None:
        options["persistence"] = None if args.persistence == "none" else absolute_uri(args.persistence)
    if getattr(args, "index", None) is not None:
        options["index"] = args.index
    if getattr(args, "checkpoint", None) is not None:
        options["checkpoint"] = {"mode": args.checkpoint}
    return options


def cmd_serve(args: argparse.Namespace) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)  # coded errors are answers
    from .server.app import serve

    options = _serve_options(args)
    tcp = None
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            sys.exit("dsh-query serve --tcp only listens on a loopback address")
        tcp = (host.strip("[]"), int(port))
    serve(options, tcp=tcp, demo=args.demo)


# -- client commands ---------------------------------------------------------------------


@contextlib.contextmanager
def _client(args: argparse.Namespace, env: dict[str, str] | None = None, **init: Any) -> Iterator[Any]:
    """A server over stdio for one command. Commands that do not search open no index; search
    uses its own index file, because an index must never be shared with a running server."""
    from rich.console import Console

    from .client import StdioClient

    if "index" not in init and "search" not in init:
        init["search"] = {"openAt": "never"}

    flags = []
    if args.persistence is not None:
        flags += ["--persistence", args.persistence]
    console = Console(stderr=True)
    with console.status("starting dsh-query server…", spinner="dots"):
        client = StdioClient(flags, initialization_options=init, env=env)
    try:
        yield client
    finally:
        client.close()


def _fail(exc: Exception) -> None:
    from .client import RpcError

    if isinstance(exc, RpcError):
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    raise exc


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _when(ms: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime(fmt)


def _first_line(text: str, width: int = 70) -> str:
    line = text.split("\n", 1)[0]
    return _text(line if len(line) <= width else line[: width - 1] + "…")


def _text(value: Any) -> str:
    """Session content is data, never rich markup: escape every string we print."""
    from rich.markup import escape

    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _console() -> Any:
    from rich.console import Console

    return Console()


def show_sessions(client: Any, as_json: bool) -> None:
    from rich.table import Table

    sessions = client.request("sessionQuery/listSessions")
    titles = client.request("sessionQuery/readTitles", {"sessionIds": [s["header"]["id"] for s in sessions]})
    title_of = {t["sessionId"]: t.get("value", {}).get("title", {}).get("title", "") for t in titles}
    if as_json:
        return _print_json(sessions)
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
        table.add_row(_text(h["id"]), _text(title_of.get(h["id"], "")), _when(h.get("createdAt")), state,
                      _text(h.get("parentSession", "")), _text(h.get("cwd", "")))
    _console().print(table)


def show_events(client: Any, session_id: str, as_json: bool) -> None:
    from rich.table import Table

    events = client.request("sessionQuery/listEvents", {"sessionId": session_id})
    if as_json:
        return _print_json(events)
    docs = client.request("sessionQuery/filterEvents", {"sessionId": session_id, "filters": []})
    text = {d["seq"]: d["text"] for d in docs}
    style = {"current": "bold green", "shadowed": "yellow", "log-only": "dim"}
    day = _when(events[0]["time"], "%Y-%m-%d") if events else ""
    table = Table(title=f"events of {_text(session_id)} ({len(events)}, from {day} UTC)", title_justify="left")
    table.add_column("seq", justify="right")
    table.add_column("type", no_wrap=True)
    table.add_column("surface", no_wrap=True)
    table.add_column("time", no_wrap=True)
    table.add_column("text", overflow="fold")
    for e in events:
        table.add_row(str(e["seq"]), _text(e["type"]), f"[{style.get(e['surface'], '')}]{e['surface']}",
                      _when(e["time"], "%H:%M:%S"), _first_line(text.get(e["seq"], ""), 60))
    _console().print(table)


def show_lineage(client: Any, session_id: str, as_json: bool) -> None:
    from rich.tree import Tree

    trace = client.request("sessionQuery/traceSession", {"sessionId": session_id})
    if as_json:
        return _print_json(trace)

    def label(record: dict[str, Any], target: bool = False) -> str:
        h = record["header"]
        flags = " ".join(f for f, on in (("live", record["live"]), ("persisted", record["persisted"])) if on)
        name = f"[bold]{_text(h['id'])}[/bold]" if target else _text(h["id"])
        return f"{name} [dim]({flags}{', sub-agent' if h.get('origin') == 'subagent' else ''})[/dim]"

    top = cursor = None
    if not trace["complete"]:
        top = cursor = Tree(f"[red]parent {_text(trace['unresolvedParentId'])} is not in the corpus[/red]")
    for record, is_target in [(r, False) for r in reversed(trace["ancestors"])] + [(trace["target"], True)]:
        node = Tree(label(record, is_target)) if cursor is None else cursor.add(label(record, is_target))
        top, cursor = top or node, node
    node = cursor
    stack = [(node, trace["descendants"])]
    while stack:
        parent, children = stack.pop()
        for child in children:
            stack.append((parent.add(label(child["session"])), child["descendants"]))
    _console().print(top)


def show_event_trace(client: Any, session_id: str, seq: int, as_json: bool) -> None:
    from rich.table import Table

    trace = client.request("sessionQuery/traceEvent", {"sessionId": session_id, "seq": seq})
    if as_json:
        return _print_json(trace)
    t = trace["target"]
    table = Table(title=f"trace of {_text(session_id)} #{seq}: {_text(t['type'])} ({t['surface']})",
                  title_justify="left")
    table.add_column("relationship")
    table.add_column("seqs")
    rows = [("replaced by", [trace["replacedBy"]] if "replacedBy" in trace else []),
            ("replacement chain", trace["replacementChain"]), ("replaced events", trace["replacedEventSeqs"]),
            ("sources", trace["sourceEventSeqs"]), ("derived events", trace["derivedEventSeqs"])]
    for name, seqs in rows:
        table.add_row(name, ", ".join(map(str, seqs)) or "—")
    _console().print(table)


def cmd_sessions(args: argparse.Namespace) -> None:
    with _client(args) as client:
        show_sessions(client, args.json)


def cmd_events(args: argparse.Namespace) -> None:
    with _client(args) as client:
        show_events(client, args.session_id, args.json)


def cmd_read(args: argparse.Namespace) -> None:
    with _client(args) as client:
        window = client.request("sessionQuery/readEvent", {"sessionId": args.session_id, "seq": args.seq,
                                                          "before": args.before, "after": args.after})
    if args.json:
        return _print_json(window)
    console = _console()
    for event in window["events"]:
        marker = "▶ target" if event.get("seq") == args.seq else ""
        console.rule(f"#{event.get('seq')} {_text(event.get('type'))} {marker}")
        console.print_json(json.dumps(event, ensure_ascii=False))


def cmd_surface(args: argparse.Namespace) -> None:
    from .model.event import Event
    from .query.text import extract_text

    with _client(args) as client:
        surface = client.request("sessionQuery/readSurface", {"sessionId": args.session_id})
    if args.json:
        return _print_json(surface)
    from rich.table import Table

    table = Table(title=f"surface of {_text(args.session_id)} (through seq {surface['capturedThroughSeq']})",
                  title_justify="left")
    for column in ("seq", "type", "text"):
        table.add_column(column, overflow="fold")
    for event in surface["events"]:
        table.add_row(str(event["seq"]), _text(event["type"]), _first_line(extract_text(Event.from_value(event))))
    _console().print(table)


def cmd_trace(args: argparse.Namespace) -> None:
    with _client(args) as client:
        if args.seq is None:
            show_lineage(client, args.session_id, args.json)
        else:
            show_event_trace(client, args.session_id, args.seq, args.json)


def cmd_mount(args: argparse.Namespace) -> None:
    args.persistence = "none"
    with _client(args) as client:
        mounted = client.request("sessionPersistence/mount", {"uri": _absolute(args.uri)})
        if args.json:
            return _print_json({"mount": mounted, "sessions": client.request("sessionQuery/listSessions")})
        _console().print(f"mounted [bold]{_text(mounted['uri'])}[/bold] "
                         f"({'writable' if mounted['writable'] else 'read-only'})")
        show_sessions(client, False)


def _absolute(uri: str) -> str:
    from .persistence.uri import absolute_uri

    return absolute_uri(uri)


def cmd_search(args: argparse.Namespace) -> None:
    from rich.table import Table

    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    from rich.console import Console

    with _client(args, index=_cli_index(args.persistence)) as client:
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
        return _print_json(page)
    table = Table(title=f'search "{_text(args.query)}"', title_justify="left")
    for column in ("session", "seq", "type", "surface", "snippet"):
        table.add_column(column, overflow="fold")
    for sid, hit in hits:
        table.add_row(_text(sid), str(hit["seq"]), _text(hit["type"]), hit["surface"], _text(hit["snippet"]))
    console = _console()
    console.print(table)
    if "nextCursor" in page:
        console.print(f"[dim]next page: --cursor {page['nextCursor']}[/dim]")


def _cli_index(persistence: str | None) -> str:
    from .server.config import cache_dir, default_persistence

    uri = default_persistence() if persistence is None else persistence
    digest = hashlib.sha256(uri.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(cache_dir(), "dsh-query", f"cli-index-{digest}.sqlite")


def cmd_demo(args: argparse.Namespace) -> None:
    """Build the demo corpus under a temporary embedded default and show what the service sees."""
    from rich.console import Console

    from .demo import populate

    console = Console()
    with tempfile.TemporaryDirectory(prefix="dsh-query-demo-") as home:
        env = {**os.environ, "XDG_STATE_HOME": os.path.join(home, "state"),
               "XDG_CACHE_HOME": os.path.join(home, "cache")}
        args.persistence = None  # the embedded default, inside the temporary state dir
        with _client(args, env=env, checkpoint={"mode": "manual"}, index=":memory:") as client:
            with console.status("building the demo corpus through sessionStore/*…"):
                ids = populate(_RpcProducer(client))
            status = client.request("sessionPersistence/status")
            console.rule("[bold]dsh-query demo")
            console.print(f"persistence: [bold]{_text(status['uri'])}[/bold] "
                          f"({status['pendingEvents']} live events not yet checkpointed)")
            show_sessions(client, False)
            console.print("[dim]fix-flaky-tests is live and persisted, and its persisted copy lags: "
                          "turn 3 was appended after the last checkpoint.[/dim]\n")
            show_events(client, ids["main"], False)
            show_lineage(client, ids["main"], False)
            show_event_trace(client, ids["main"], int(ids["rewritten_seq"]), False)
            hits = client.request("sessionQuery/searchSessions", {"query": "fake clock", "limit": 5})
            console.print('\nsearch "fake clock": ' + ", ".join(
                f"{h['header']['id']}#{h['bestMatch']['seq']}" for h in hits["items"]))


class _RpcProducer:
    """The demo's producer over JSON-RPC."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def create(self, header: dict[str, Any], seed: list[dict[str, Any]] | None = None) -> None:
        params: dict[str, Any] = {"header": header}
        if seed is not None:
            params["seed"] = seed
        self.client.request("sessionStore/create", params)

    def append(self, session_id: str, events: list[dict[str, Any]]) -> None:
        self.client.request("sessionStore/append", {"sessionId": session_id, "events": events})

    def checkpoint(self, session_id: str) -> None:
        self.client.request("sessionStore/checkpoint", {"sessionId": session_id})

    def remove(self, session_id: str) -> None:
        self.client.request("sessionStore/remove", {"sessionId": session_id})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dsh-query", description="Exact inspection of agent session histories.")
    parser.add_argument("--version", action="version", version=f"dsh-query {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--persistence", metavar="URI",
                        help="backend to mount: jsonl:<root>, sqlite:<file>, or none (default: the embedded sqlite store)")
    common.add_argument("--json", action="store_true", help="print JSON instead of tables")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", parents=[common], help="run the JSON-RPC server over stdio (or --tcp)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on a loopback TCP port instead of stdio")
    serve.add_argument("--index", metavar="PATH", help="full-text index path, or :memory:")
    serve.add_argument("--checkpoint", choices=("auto", "manual"), help="how live events reach persistence")
    serve.add_argument("--demo", action="store_true",
                       help="preload the demo corpus (live sessions in memory, persisted ones in a temporary store)")
    serve.set_defaults(func=cmd_serve)

    sub.add_parser("demo", parents=[common], help="build a demo corpus and show what the service sees").set_defaults(func=cmd_demo)
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
    search.add_argument("--limit", type=int, default=20)
    search.add_argument("--cursor", help="continue from a previous page")
    search.set_defaults(func=cmd_search)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - client errors print one line, not a traceback
        _fail(exc)


if __name__ == "__main__":
    main()
