"""How client commands print what the server answered: one-line tables (lines.py) and trees, or
JSON. Session content is data, never rich markup: every string from the server is escaped or
carried in a ``Text``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..client import Client, RpcError
from . import style

if TYPE_CHECKING:  # ids.py compiles its patterns as it loads: a listing printed as JSON needs none
    from .ids import Parents


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_result(client: Client, method: str, params: dict[str, Any]) -> None:
    """A result printed as it is, as ``print_json`` prints it: a hub indents it itself
    (hub/render), so a large one (a long session's surface) is never decoded here."""
    print_pretty(client.request_pretty(method, params))


def print_pretty(text: bytes) -> None:
    """JSON text indented as ``print_json`` indents it (Client.request_pretty)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text + b"\n")


def when(ms: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return ""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime(fmt)


def safe(value: Any) -> str:
    """Session content is data, never rich markup: escape every string we print."""
    from rich.markup import escape

    return escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def plural(n: int, noun: str) -> str:
    """``1 session``, ``2 sessions``."""
    return f"{n} {noun if n == 1 else noun + 's'}"


def seq_ranges(seqs: Iterable[int]) -> str:
    """Seqs as ranges with their count: up to three runs listed (``#7–#9, #12, 4 events``), more
    as their span (``#7–#946, 191 events in 24 runs``); ``—`` for none."""
    ordered = sorted(set(seqs))
    if not ordered:
        return "—"
    if len(ordered) == 1:
        return f"#{ordered[0]}"
    runs: list[tuple[int, int]] = []
    for seq in ordered:
        if runs and seq == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    count = plural(len(ordered), "event")
    if len(runs) > 3:
        return f"#{ordered[0]}–#{ordered[-1]}, {count} in {len(runs)} runs"
    shown = ", ".join(f"#{a}" if a == b else f"#{a}–#{b}" for a, b in runs)
    return f"{shown}, {count}"


def chain(seqs: list[int]) -> str:
    """A replacement chain in its order (``#5 → #9 → #12``); a long one as its ends."""
    if not seqs:
        return "—"
    if len(seqs) <= 4:
        return " → ".join(f"#{s}" for s in seqs)
    return f"#{seqs[0]} → … → #{seqs[-1]}, {plural(len(seqs), 'event')}"


def agent_of(header: dict[str, Any]) -> str:
    """importers.md §0.8: the header's source.agent; dsh's own sessions have no source."""
    source = header.get("source")
    agent = source.get("agent") if isinstance(source, dict) else None
    return agent if isinstance(agent, str) and agent else "dsh"


class Listing:
    """What ``listSessions`` answered, with the ids as they are shown and taken."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        from .ids import parents_of

        self.parents: Parents = parents_of(records)
        self._short: dict[str, str] | None = None

    @property
    def ids(self) -> list[str]:
        return [r["header"]["id"] for r in self.records]

    def short(self, sid: str) -> str:
        if self._short is None:
            from .ids import short_ids

            self._short = short_ids(self.ids, self.parents)
        return self._short.get(sid, sid)

    def resolve(self, text: str) -> str:
        """An id, its shown form or a prefix (ids.py) as the id the server knows."""
        from .ids import resolve_id

        return resolve_id(text, self.ids, self.parents)


def listing(client: Client) -> Listing:
    return Listing(client.request("sessionQuery/listSessions"))


NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"


def on_session(
    client: Client, text: str, as_json: bool, show: Callable[[str, str | None], None]
) -> None:
    """``show(id, name)`` for the session ``text`` names (an id, its shown form or a prefix;
    ``name``: the id as listed, for a heading). ``--json`` shows no name, so an exact id is used
    as it is: the listing, which on a hub's large corpus costs more than the command, is read
    only when the server does not know ``text`` as an id (``show`` fails before printing)."""
    if not as_json:
        listed = listing(client)
        sid = listed.resolve(text)
        return show(sid, listed.short(sid))
    try:
        return show(text, None)
    except RpcError as exc:
        if exc.data_code != NOT_FOUND:
            raise
        sid = listing(client).resolve(text)
        if sid == text:
            raise
    show(sid, None)


def titles(client: Client, ids: list[str]) -> dict[str, str]:
    """Each session's current title, where it has one."""
    if not ids:
        return {}
    out: dict[str, str] = {}
    for t in client.request("sessionQuery/readTitles", {"sessionIds": ids}):
        title = t.get("value", {}).get("title", {}).get("title")
        if isinstance(title, str) and title.strip():
            out[t["sessionId"]] = title
    return out


def sessions_json(
    client: Client, keep: Callable[[dict[str, Any]], bool] | None, limit: int | None
) -> bytes:
    """``sessions --json``: the kept records as ``print_json`` prints them, each with ``title``
    last where the session has one. A hub adds the titles and indents the listing itself
    (hub/render with ``titles``); from a private server the records' text is its indented listing,
    and the titles are added here. Either text is cut into records and joined again, never
    encoded here: for 10,000 records that would cost more than the rest of the command."""
    from ..hub.client import HubClient  # loaded already when the command talks to a hub

    if isinstance(client, HubClient):
        params = {"method": "sessionQuery/listSessions", "params": {}, "titles": True}
        text = client.request_raw("hub/render", params)
        if keep is None and limit is None:
            return text
        return _joined([item for _, item in _kept(text, keep, limit)])
    kept = _kept(client.request_pretty("sessionQuery/listSessions"), keep, limit)
    title_of = titles(client, [r["header"]["id"] for r, _ in kept])
    out: list[bytes] = []
    for record, item in kept:
        title = title_of.get(record["header"]["id"])
        if title is None:
            out.append(item)
        else:  # the item ends with its closing "\n  }"
            shown = json.dumps(title, ensure_ascii=False).encode("utf-8", "surrogateescape")
            out.append(item[:-4] + b',\n    "title": ' + shown + b"\n  }")
    return _joined(out)


def _kept(
    text: bytes, keep: Callable[[dict[str, Any]], bool] | None, limit: int | None
) -> list[tuple[dict[str, Any], bytes]]:
    """The records of an indented listing that ``keep`` keeps (up to ``limit``), each with its
    own text."""
    records: list[dict[str, Any]] = json.loads(text)
    pairs = zip(records, pretty_items(text), strict=True)
    return [(r, item) for r, item in pairs if keep is None or keep(r["header"])][:limit]


def _joined(items: list[bytes]) -> bytes:
    """Items of ``pretty_items`` as the indented array again."""
    return b"[\n" + b",\n".join(items) + b"\n]" if items else b"[]"


def pretty_items(text: bytes) -> list[bytes]:
    """The objects of an indented JSON array of non-empty objects (``print_json``'s form), each
    its own text from ``  {`` to ``  }``. In that form ``\\n  },\\n`` separates two top-level items and
    nothing else: a nested closer is indented further, and no string holds a raw newline."""
    body = text.strip()
    if body == b"[]":
        return []
    parts = body[2:-2].split(b"\n  },\n")  # inside "[\n" and "\n]"
    return [part + b"\n  }" for part in parts[:-1]] + parts[-1:]


def show_sessions(
    client: Client,
    as_json: bool,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    limit: int | None = None,
    page: bool = True,
) -> None:
    """One line per session, fitted to the terminal; ids as they are shown and taken (ids.py).
    JSON carries the server's records plus ``title`` where a session has one."""
    from .unreadable import warn_status

    if as_json:
        print_pretty(sessions_json(client, keep, limit))
        return warn_status(client)
    listed = listing(client)
    sessions = [r for r in listed.records if keep is None or keep(r["header"])]
    more = len(sessions) - limit if limit is not None and len(sessions) > limit else 0
    sessions = sessions[:limit] if more else sessions
    title_of = titles(client, [s["header"]["id"] for s in sessions])
    from rich.text import Text

    from .describe import one_line
    from .lines import Column, emit, render, terminal_width

    columns = [
        Column("id", style=style.ID),
        Column("agent"),
        Column("created (UTC)"),
        Column("state", drop=3),
        Column("title", flexible=True, keep=24),
        Column("parent", flexible=True, keep=10, drop=1, style=style.ID),
        Column("cwd", flexible=True, keep=16, drop=2),
    ]
    rows: list[list[Any]] = []
    for record in sessions:
        h = record["header"]
        state = "+".join(
            n for n, on in (("live", record["live"]), ("persisted", record["persisted"])) if on
        )
        parent = h.get("parentSession")
        rows.append(
            [
                listed.short(h["id"]),
                agent_of(h),
                when(h.get("createdAt")),
                Text(state, style="bold" if record["live"] else ""),
                one_line(title_of.get(h["id"], "")),
                listed.short(parent) if isinstance(parent, str) else "",
                str(h.get("cwd", "")),
            ]
        )
    total = len(listed.records)
    if not total:
        heading = "no sessions"
    elif not sessions:
        heading = f"none of {plural(total, 'session')} match"
    elif len(sessions) == total:
        heading = f"{plural(total, 'session')} (newest first)"
    else:
        heading = f"{len(sessions)} of {total} sessions (newest first)"
    lines: list[Any] = [Text(heading, style=style.HEADER)]
    if sessions:
        lines += render(columns, rows, terminal_width())
    if more:
        lines.append(Text(f"… {more} more (--limit N shows more)", style=style.DIM))
    emit(lines, page)
    warn_status(client)  # the transcripts the listing skipped, after the results, on stderr


def show_lineage(client: Client, session_id: str, as_json: bool) -> None:
    if as_json:
        return print_result(client, "sessionQuery/traceSession", {"sessionId": session_id})
    from rich.text import Text
    from rich.tree import Tree

    from .describe import one_line
    from .lines import cut

    trace = client.request("sessionQuery/traceSession", {"sessionId": session_id})
    listed = listing(client)
    records = [trace["target"], *trace["ancestors"]]
    stack = list(trace["descendants"])
    while stack:
        node = stack.pop()
        records.append(node["session"])
        stack.extend(node["descendants"])
    title_of = titles(client, [r["header"]["id"] for r in records])

    def label(record: dict[str, Any], target: bool = False) -> Text:
        h = record["header"]
        flags = [
            f for f, on in (("live", record["live"]), ("persisted", record["persisted"])) if on
        ]
        if h.get("origin") == "subagent":
            flags.append("sub-agent")
        out = Text(listed.short(h["id"]), style=f"{style.ID} bold" if target else style.ID)
        title = one_line(title_of.get(h["id"], ""))
        if title:
            out.append("  " + cut(title, 60))
        out.append(f"  ({', '.join(flags) or 'not stored'})", style=style.DIM)
        if target:
            out.append("  ◀ this session", style="bold")
        return out

    top: Tree | None = None
    cursor: Tree | None = None
    if not trace["complete"]:
        missing = listed.short(trace["unresolvedParentId"])
        top = cursor = Tree(Text(f"parent {missing} is not in the corpus", style="red"))
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
    branches = [(cursor, trace["descendants"])]
    while branches:
        parent, children = branches.pop()
        for child in children:
            branches.append((parent.add(label(child["session"])), child["descendants"]))
    style.console().print(top)


def show_event_trace(
    client: Client, session_id: str, seq: int, as_json: bool, name: str | None = None
) -> None:
    params = {"sessionId": session_id, "seq": seq}
    if as_json:
        return print_result(client, "sessionQuery/traceEvent", params)
    from rich.text import Text

    from .lines import Column, emit, render, terminal_width

    trace = client.request("sessionQuery/traceEvent", params)
    t = trace["target"]
    surface = t["surface"]
    title = Text(f"trace of {name or session_id} #{seq}: {t['type']} (", style=style.HEADER)
    title.append(surface, style=style.SURFACE.get(surface, ""))
    title.append(")")
    rows = [
        ["replaced by", seq_ranges([trace["replacedBy"]] if "replacedBy" in trace else [])],
        ["replacement chain", chain(trace["replacementChain"])],
        ["replaced events", seq_ranges(trace["replacedEventSeqs"])],
        ["sources", seq_ranges(trace["sourceEventSeqs"])],
        ["derived events", seq_ranges(trace["derivedEventSeqs"])],
    ]
    columns = [Column("relationship"), Column("seqs", flexible=True)]
    emit([title, *render(columns, rows, terminal_width())], page=False)
