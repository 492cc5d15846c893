"""``dsh-query search``: one line per hit with the match highlighted (also marked « », since
colour never carries meaning alone), and pages people can ask for by number.

The server's pages carry no total, only whether there is a next page, so the heading says what it
knows: how many hits this page holds, which page it is, and how to get the next. A cursor is bound
to the server instance that issued it (semantics.md §6.11): through the hub a printed cursor works
on the next command, but a ``--no-hub`` command starts its own server, so ``--page N`` is how the
command line pages either way: it takes the first page's cursor and sets its offset, which the
cursor format allows a client to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..client import Client
from . import style

OPEN, CLOSE = "«", "»"


def _decode(cursor: str) -> dict[str, Any] | None:
    """A cursor's object (semantics.md §6.11: base64url JSON, padding optional); None when it is
    not one, so the server reports it as invalid."""
    import base64

    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeError):
        return None
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _encode(value: dict[str, Any]) -> str:
    import base64

    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def page_of(cursor: str, limit: int) -> int | None:
    """The page number a cursor starts (its offset over the page size)."""
    value = _decode(cursor)
    offset = value.get("offset") if value is not None else None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        return None
    return offset // limit + 1


def fetch(client: Client, method: str, params: dict[str, Any], page: int) -> dict[str, Any]:
    """Page ``page`` (from 1) of a search; past the last page, an empty page."""
    first = client.request(method, params)
    if page == 1:
        return first
    template = _decode(first.get("nextCursor", ""))
    if template is None:  # one page in all
        return {k: v for k, v in first.items() if k != "items"} | {"items": []}
    template["offset"] = (page - 1) * params["limit"]
    return client.request(method, {**params, "cursor": _encode(template)})


def _resume(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A page from a cursor; one this server did not issue is refused with the way out."""
    from ..client import RpcError

    try:
        return client.request(method, params)
    except RpcError as exc:
        if exc.data_code == "SESSION_QUERY_INVALID_CURSOR":
            exc.message += " (only the server that issued a cursor takes it back; use --page N)"
        raise


def _pattern(query: str) -> re.Pattern[str] | None:
    """The query's words in order, any non-word run between them, case-insensitive: what the
    server's phrase match (semantics.md §6.6) looks like in a snippet (diacritics aside)."""
    words = re.findall(r"\w+", query)
    if not words:
        return None
    return re.compile(r"\W+".join(re.escape(w) for w in words), re.IGNORECASE)


def highlight(snippet: str, query: str) -> Any:
    """The snippet on one line with every match marked « » and styled."""
    from rich.text import Text

    from .describe import one_line

    text = one_line(snippet)
    pattern = _pattern(query)
    out = Text()
    at = 0
    for match in pattern.finditer(text) if pattern is not None else ():
        out.append(text[at : match.start()])
        out.append(OPEN + match.group() + CLOSE, style=style.MATCH)
        at = match.end()
    out.append(text[at:])
    return out


def heading(query: str, noun: str, count: int, page: int, more: bool) -> str:
    from .render import plural

    said = f'search "{query}": '
    if count == 0:
        return said + ("no matches" if page == 1 else f"no page {page}: the hits end before it")
    hits = plural(count, f"matching {noun}")
    if more:
        return said + f"{hits} on page {page}; more: --page {page + 1}"
    return said + (hits if page == 1 else f"{hits} on page {page}, the last")


def run(client: Client, args: Any) -> None:
    """One search (of every session, or of one with ``--session``), printed. ``--json`` prints
    the page as it came, so it reads the listing only to resolve a ``--session`` prefix."""
    from .render import listing, on_session, print_pretty

    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    page = args.page
    if args.cursor:
        params["cursor"] = args.cursor
        page = page_of(args.cursor, args.limit) or 1
    method = "sessionQuery/searchEvents" if args.session else "sessionQuery/searchSessions"
    answers: list[tuple[str, Any]] = []  # (the session searched, or "", the page)
    # --json of a first page prints it as it comes (Client.request_pretty: a hub indents it)
    as_it_comes = args.json and not args.cursor and page == 1

    def search(session_id: str, name: str | None = None) -> None:
        asked = {**params, "sessionId": session_id} if session_id else params
        if as_it_comes:
            answer: Any = client.request_pretty(method, asked)
        elif args.cursor:
            answer = _resume(client, method, asked)
        else:
            answer = fetch(client, method, asked, page)
        answers.append((session_id, answer))

    # The index is brought up to date before every search; the first one over a large store
    # builds it: the server's progress says how far it is (cli/progress_bar.py, on a terminal).
    if args.session:
        on_session(client, args.session, args.json, search)
    else:
        search("")
    session_id, result = answers[-1]
    from .unreadable import warn_status

    if as_it_comes:
        print_pretty(result)
        # The page as it came (JSON text), decoded only when it names unreadable sessions.
        named = b'"unreadableCount"' in result
        return warn_status(client, json.loads(result) if named else {})
    if args.json:
        from .render import print_json

        print_json(result)
        return warn_status(client, result)
    from rich.text import Text

    from .lines import Column, emit, render, terminal_width

    listed = listing(client)
    if args.session:
        hits = [(session_id, h) for h in result["items"]]
    else:
        hits = [(h["header"]["id"], h["bestMatch"]) for h in result["items"]]
    noun = "event" if args.session else "session"
    lines: list[Any] = [
        Text(
            heading(args.query, noun, len(hits), page, "nextCursor" in result),
            style=style.HEADER,
        )
    ]
    columns = [
        Column("session", style=style.ID),
        Column("seq", right=True),
        Column("type", drop=2),
        Column("class", drop=1),
        Column("snippet", flexible=True, keep=36, focus=True),
    ]
    rows: list[list[Any]] = [
        [
            listed.short(sid),
            str(hit["seq"]),
            str(hit["type"]),
            Text(str(hit["surface"]), style=style.SURFACE.get(str(hit["surface"]), "")),
            highlight(str(hit["snippet"]), args.query),
        ]
        for sid, hit in hits
    ]
    if rows:
        lines += render(columns, rows, terminal_width())
    emit(lines)
    warn_status(client, result)  # after the results, on stderr


def _page_number(text: str) -> int:
    import argparse

    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f'--page takes a page number from 1, got "{text}"')
    return int(text)


def register(sub: Any, parents: list[Any], command: Callable[[Any], None]) -> None:
    """The ``search`` parser, running ``command`` (commands.py starts the server)."""
    from ..resolve import DEFAULT_LIMIT

    search = sub.add_parser(
        "search",
        parents=parents,
        help="full-text search: the best match of each session, or every match in one",
        description="Full-text search of every session (the best match of each, best first), "
        "or of one session with --session. The query is one phrase: its words in order, "
        "case and accents ignored.",
    )
    search.add_argument("query", help="the words to find, in order (one phrase)")
    search.add_argument(
        "--session", metavar="ID", help="search within one session (an id or its prefix)"
    )
    search.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"hits per page (default {DEFAULT_LIMIT})",
    )
    search.add_argument(
        "--page",
        type=_page_number,
        default=1,
        metavar="N",
        help="show page N of the hits (default 1)",
    )
    search.add_argument(
        "--cursor",
        help="continue from a nextCursor of --json output (only the server that issued it "
        "takes it back; --page works across commands)",
    )
    search.set_defaults(func=command)


__all__ = ["CLOSE", "OPEN", "fetch", "heading", "highlight", "page_of", "register", "run"]
