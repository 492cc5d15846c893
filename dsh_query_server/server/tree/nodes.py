"""What a tree node looks like on the wire (protocol.md §6 ``TreeNode``) and how each kind of
node is labelled: sessions, events, "more" pagers, errors and unresolved parents."""

from __future__ import annotations

import datetime as _dt
import time as _time
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ... import jsoncodec
from ...errors import QueryError
from ...model.event import Event
from ...model.text import extract_text
from ...query.loaded import Record
from ...values import collapse_whitespace, is_number
from .agents import (
    AGENT_ICONS,
    COMPACTION_HELPER,
    COMPACTION_ICON,
    agent_of,
    kin_of,
    source_line,
    source_of,
    source_path,
)
from .commands import OPEN_EVENT
from .ids import ERR, Key, encode_id
from .labels import Lag, SessionInfo

JSONValue = Any  # a number when is_number() says so, else anything JSON

LABEL_CHARS = 80
# A session's title is cut shorter than other labels so that the description after it (what the
# session is to its parent, agent, date, state) still shows in a side bar about 520 px wide.
TITLE_CHARS = 32
# An event's summary is short for the same reason: its class word comes after it.
SUMMARY_CHARS = 24
TOOLTIP_TEXT_CHARS = 500

SURFACE_ICONS = {
    "current": "circle-filled",
    "shadowed": "circle-slash",
    "log-only": "circle-outline",
}


class TreeResource(msgspec.Struct, omit_defaults=True):
    sessionId: str
    seq: int | UnsetType = UNSET


class TreeCommand(msgspec.Struct, omit_defaults=True):
    title: str
    command: str
    arguments: list[TreeResource] | UnsetType = UNSET  # the event to open


class TreeNode(msgspec.Struct, omit_defaults=True):
    """protocol.md §6 ``TreeNode``; absent optional keys are omitted. ``collapsible`` has no
    default so it is always sent."""

    id: str
    label: str
    collapsible: str
    description: str | UnsetType = UNSET
    tooltip: str | UnsetType = UNSET
    icon: str | UnsetType = UNSET
    contextValue: str | UnsetType = UNSET
    resource: TreeResource | UnsetType = UNSET
    command: TreeCommand | UnsetType = UNSET
    # Session nodes only: the agent that wrote it (importers.md §0.8 ``source.agent``, else
    # "dsh"), for clients that show it as a column (Neovim) rather than in the description.
    agent: str | UnsetType = UNSET
    # Event nodes only: the event's class (semantics.md §1.8), for clients that colour the icon;
    # the description says the same word, so colour never carries it alone.
    surface: str | UnsetType = UNSET


# -- formatting ------------------------------------------------------------------------------


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    return truncate(collapse_whitespace(text), limit)


def title_text(text: str, limit: int = TITLE_CHARS) -> str:
    """One line of at most ``limit`` characters, cut after a whole word when one ends in the
    last third (a title reads better cut between words)."""
    text = collapse_whitespace(text)
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit * 2 // 3:
        head = head[:space]
    return head.rstrip(" ,.;:-–—") + "…"


def iso_time(ms: JSONValue) -> str | None:
    if not is_number(ms):
        return None
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def relative_time(ms: JSONValue, now: float | None = None) -> str | None:
    """ "just now", "5 min ago", "3 h ago", "12 d ago"; else "Feb 10" within the current year
    and the UTC date before it (all UTC)."""
    if not is_number(ms):
        return None
    delta = (_time.time() if now is None else now) - ms / 1000
    if 0 <= delta < 60:
        return "just now"
    if 0 <= delta < 3600:
        return f"{int(delta // 60)} min ago"
    if 0 <= delta < 86400:
        return f"{int(delta // 3600)} h ago"
    if 0 <= delta < 30 * 86400:
        return f"{int(delta // 86400)} d ago"
    iso = iso_time(ms)
    if iso is None:
        return None
    this_year = _time.strftime("%Y", _time.gmtime(_time.time() if now is None else now))
    if iso[:4] == this_year:
        return f"{_MONTHS[int(iso[5:7]) - 1]} {int(iso[8:10])}"
    return iso[:10]


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def clock_time(ms: JSONValue) -> str | None:
    """Event times as local wall-clock HH:MM:SS: within one session the date rarely helps and
    relative times would all read the same; the full UTC instant is in the tooltip."""
    if not is_number(ms):
        return None
    try:
        return _time.strftime("%H:%M:%S", _time.localtime(ms / 1000))
    except (OverflowError, OSError, ValueError):
        return None


def join(*parts: str | None) -> str:
    return " · ".join(p for p in parts if p)


def type_text(value: object) -> str:
    return value if isinstance(value, str) else jsoncodec.dumps(value).decode("utf-8", "replace")


# -- nodes -----------------------------------------------------------------------------------


def session_node(
    key: Key,
    record: Record,
    info: SessionInfo | None,
    lag: Lag | None,
    *,
    collapsible: str = "collapsed",
    role: str | None = None,
) -> TreeNode:
    """A session: its title (else first message, else id) cut to TITLE_CHARS, and a description
    that always names the agent, the date and the state (``role`` first when given); the rest
    (agent preset, cwd, ids) is in the tooltip."""
    header = record.header
    sid = header.id
    label = None
    if info is not None:
        label = info.title or info.first_message
    badges: list[str] = []
    if record.live:
        badges.append("live")
    if record.persisted:
        badges.append("persisted")
    if lag is not None and lag.lagging:
        badges.append("lagging")
    source = source_of(header)
    agent = agent_of(header, source)
    kin = kin_of(header, source)
    sub = header.origin == "subagent" or header.parent_session is not UNSET
    # A compaction helper says so (its first message is the parent's conversation, not a
    # title); an imported session shows its agent's icon; for dsh's own the sub-agent shape
    # comes first (it says where the session came from); liveness is in the badges.
    icon = (
        COMPACTION_ICON
        if kin == COMPACTION_HELPER
        else AGENT_ICONS.get(agent)
        or ("type-hierarchy-sub" if sub else "circle-filled" if record.live else "history")
    )
    shown = "Compaction helper" if kin == COMPACTION_HELPER else title_text(label) if label else sid
    lines = [one_line(label, 200)] if label else []
    if kin == COMPACTION_HELPER:
        lines.insert(0, "Compaction helper: the model call that wrote a compaction's summary")
    lines.append(f"id: {sid}")
    lines.append(f"source: {source_line(source, agent)}")
    path = source_path(source)
    if path is not None:
        lines.append(f"transcript: {path}")
    if header.cwd is not UNSET:
        lines.append(f"cwd: {type_text(header.cwd)}")
    if header.parent_session is not UNSET:
        lines.append(f"parent: {type_text(header.parent_session)}")
    if header.origin is not UNSET:
        lines.append(f"origin: {type_text(header.origin)}")
    if header.agent_preset is not UNSET:
        lines.append(f"agent: {type_text(header.agent_preset)}")
    created = iso_time(header.created_at)
    lines.append(f"created: {created or type_text(header.created_at)}")
    if info is not None and info.events is not None:
        lines.append(f"events: {info.events}")
    state = ", ".join(b for b in badges if b != "lagging")
    if lag is not None and lag.lagging:
        state += f" (persisted copy holds {lag.persisted} of {lag.live} events)"
    lines.append(f"state: {state}")
    return TreeNode(
        id=encode_id(key),
        label=shown,
        collapsible=collapsible,
        description=join(role, agent, relative_time(header.created_at), *badges),
        tooltip="\n".join(lines),
        icon=icon,
        contextValue="session.live" if record.live else "session.persisted",
        resource=TreeResource(sessionId=sid),
        agent=agent,
    )


def event_node(
    key: Key, session_id: str, seq: int, event: Event, surface: str, role: str | None = None
) -> TreeNode:
    text = extract_text(event)
    etype = type_text(event.type)
    iso = iso_time(event.time)
    tooltip = f"#{seq} {etype} ({surface})" + (f"\n{iso}" if iso else "")
    if text:
        tooltip += "\n\n" + truncate(text, TOOLTIP_TEXT_CHARS)
    return TreeNode(
        id=encode_id(key),
        label=event_label(seq, event, text),
        collapsible="none",
        description=join(role, surface, clock_time(event.time)),
        tooltip=tooltip,
        icon=SURFACE_ICONS.get(surface, "circle-outline"),
        contextValue=f"event.{surface}",
        resource=TreeResource(sessionId=session_id, seq=seq),
        command=open_event(session_id, seq),
        surface=surface,
    )


def more_node(key: Key, remaining: int, noun: str) -> TreeNode:
    return TreeNode(
        id=encode_id(key),
        label="More…",
        collapsible="collapsed",
        description=f"{remaining} more {noun}",
        icon="ellipsis",
        contextValue="more",
    )


def error_node(view: str, exc: QueryError, parent: Key | None, root_args: list[object]) -> TreeNode:
    node = TreeNode(
        id=encode_id((view, ERR, None if parent is None else list(parent), root_args)),
        label=exc.message,
        collapsible="none",
        description=exc.code,
        tooltip=f"{exc.code}: {exc.message}",
        icon="error",
        contextValue="error",
    )
    if exc.session_id is not None:
        node.resource = TreeResource(sessionId=exc.session_id)
    return node


def unresolved_node(key: Key, parent_id: object) -> TreeNode:
    pid = type_text(parent_id)
    return TreeNode(
        id=encode_id(key),
        label=f'parent "{pid}" not in corpus',
        collapsible="none",
        description="unresolved",
        tooltip=f'The parent session "{pid}" is neither live nor in the mounted persistence, so '
        "the lineage above this point is unknown.",
        icon="warning",
        contextValue="lineage.unresolved",
        resource=TreeResource(sessionId=pid),
    )


def open_event(session_id: str, seq: int) -> TreeCommand:
    return TreeCommand(
        title="Open Event",
        command=OPEN_EVENT,
        arguments=[TreeResource(sessionId=session_id, seq=seq)],
    )


_QUOTED = frozenset({"user/message", "assistant/message", "tool/result", "session/title"})


def event_label(seq: int, event: Event, text: str) -> str:
    """``#12 tool/call bash``, ``#3 user/message "first words…"``, ``#9 turn/end completed``."""
    etype = type_text(event.type)
    summary = ""
    if event.type == "session/title":
        data = event.data()
        title = data.get("title") if isinstance(data, dict) else None
        summary = title if isinstance(title, str) else ""
    elif event.type == "turn/end":
        data = event.data()
        reason = data.get("reason") if isinstance(data, dict) else None
        kind = reason.get("kind") if isinstance(reason, dict) else None
        summary = kind if isinstance(kind, str) else ""
    elif text:
        summary = text.split("\n", 1)[0]
    summary = title_text(summary, SUMMARY_CHARS)
    if not summary:
        return f"#{seq} {etype}"
    return f'#{seq} {etype} "{summary}"' if event.type in _QUOTED else f"#{seq} {etype} {summary}"
