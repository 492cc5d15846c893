"""Editor-neutral tree views (protocol.md §6): ``sessionQuery/treeChildren`` and ``treeParent``.

The server computes every node, so VS Code and Neovim render the same tree. Design points:

* **Stateless, self-describing node ids.** An id is ``base64url(JSON array)`` without padding; the
  array is ``[view, kind, *params]`` (kinds and params are listed in ``_KINDS``). Everything
  needed to expand the node or to find its parent is in the id, so the server remembers nothing
  between requests and an id survives a server restart. Ids hold only immutable facts (session
  ids, seqs, page offsets), never positions that shift as the corpus grows, so expansion state
  survives refreshes. Anything that does not decode to a known kind of the requested view is
  ``-32602`` ``SESSION_QUERY_INVALID_REQUEST``.
* **Errors are nodes.** A failure while computing a level (session gone, persistence down,
  corrupt log, cycle) is answered as one node with ``contextValue: "error"`` and the error's
  message as label, so a tree never breaks on a bad session. Only bad params fail the request,
  and cancellation still answers ``-32800`` (the client asked for it).
* **Paging.** A level never has more than ``MAX_CHILDREN`` (200) children: when a list is longer,
  a page shows ``PAGE`` (199) entries and a final ``more`` node whose children are the next page.
  Fixed page boundaries make a node's parent computable from its index alone for event lists
  (seqs never move: logs only grow).
* **Cost.** One service call per level where possible. A sessions/lineage level is one corpus
  listing (no log loads) plus, for the labels of the sessions shown on that page only, a
  title/first-message projection (live sessions from memory; each persisted-only one ``inspect``,
  at most ``persistedInspectConcurrency`` at a time, the same cost as ``readTitles`` of the page)
  and the "lagging" check (see ``Ctx.lags``). An event level is one single-target load and fold.
  ``treeParent`` is free except where a position must be recomputed (a session's page, a
  descendant's parent): one listing.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import logging
import threading
import time as _time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Sequence

import msgspec
from msgspec import UNSET, UnsetType

from .. import errors, jsoncodec
from ..errors import QueryError
from ..model.event import Event, Header
from ..cancel import CancelToken
from ..persistence.base import Window
from ..query import lineage, trace
from ..query.loaded import Loaded, Record, check_cancelled, target_index
from ..query.titlefold import last_title_event, title_from, title_window
from ..query.text import extract_text
from ..values import collapse_whitespace, is_nonneg_safe_integer, is_number
from .runtime import Runtime

log = logging.getLogger(__name__)

MAX_CHILDREN = 200
LABEL_BUDGET_SECONDS = 2.0  # time a sessions page may spend reading persisted logs for labels
LABEL_EVENTS = 64  # events a persisted label reads from the start of the log (and of its seed)
PAGE = MAX_CHILDREN - 1  # entries per page when a "more" node is needed
# A session's Lineage group (sessions view) may start with its parent link, so its child links
# page one shorter to keep that level within MAX_CHILDREN too.
LINK_PAGE = PAGE - 1
# Ancestors shown per level in the lineage view: the roots also hold the target and possibly the
# "parent not in corpus" node, so 198 keeps that level within MAX_CHILDREN.
ANCESTOR_BLOCK = MAX_CHILDREN - 2
LABEL_CHARS = 80
SUMMARY_CHARS = 60
TOOLTIP_TEXT_CHARS = 500

VIEWS = ("sessions", "lineage", "events", "eventTrace")
OPEN_EVENT = "dshQuery.openEvent"

# eventTrace groups: key in the id -> (label, icon).
TRACE_GROUPS: dict[str, tuple[str, str]] = {
    "replacedBy": ("Replaced by", "arrow-swap"),
    "chain": ("Replacement chain", "list-ordered"),
    "replaced": ("Replaced events", "replace-all"),
    "sources": ("Sources", "arrow-left"),
    "derived": ("Derived events", "arrow-right"),
}

SURFACE_ICONS = {"current": "circle-filled", "shadowed": "circle-slash", "log-only": "circle-outline"}


# -- wire shapes -----------------------------------------------------------------------------


class TreeResource(msgspec.Struct, omit_defaults=True):
    sessionId: str
    seq: int | UnsetType = UNSET


class TreeCommand(msgspec.Struct, omit_defaults=True):
    title: str
    command: str
    arguments: list[Any] | UnsetType = UNSET


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


# -- node ids --------------------------------------------------------------------------------

Key = tuple  # (view, kind, *params)

_S = "session id"
_I = "offset or seq"
_G = "trace group"

# Per view: kind -> parameter types. "err" is shared by every view (see _valid_err).
_KINDS: dict[str, dict[str, tuple[str, ...]]] = {
    "sessions": {
        "more": (_I,),  # next page of the corpus, from offset
        "s": (_S,),  # a session
        "events": (_S,),  # the "Events" group of a session
        "emore": (_S, _I),  # next page of that session's events
        "e": (_S, _I),  # one event
        "lineage": (_S,),  # the "Lineage" group of a session
        "parent": (_S,),  # link to the session's parent (or "not in corpus")
        "child": (_S, _S),  # link to one direct child: (session, child)
        "cmore": (_S, _I),  # next page of child links
    },
    "events": {
        "emore": (_S, _I),
        "e": (_S, _I),
    },
    "lineage": {
        "t": (_S,),  # the target
        "u": (_S, _S),  # (target, unresolved parent id)
        "a": (_S, _S),  # (target, ancestor id)
        "amore": (_S, _I),  # (target, end): the ancestors above the shown block
        "d": (_S, _S),  # (target, descendant id)
        "dmore": (_S, _S, _I),  # (target, parent id, offset): next page of that parent's children
    },
    "eventTrace": {
        "t": (_S, _I),  # (session, seq): the target event
        "g": (_S, _I, _G),  # a relationship group
        "gmore": (_S, _I, _G, _I),  # next page of a group, from offset
        "l": (_S, _I, _G, _I, _I),  # (session, seq, group, index in group, linked seq)
    },
}


def invalid(message: str) -> QueryError:
    return QueryError(errors.INVALID_REQUEST, message)


def encode_id(key: Key) -> str:
    return base64.urlsafe_b64encode(jsoncodec.dumps(list(key))).rstrip(b"=").decode("ascii")


def decode_id(view: str, node_id: Any) -> Key:
    if not isinstance(node_id, str):
        raise invalid("nodeId must be a string")
    problem = invalid(f'nodeId is not a node of the "{view}" view')
    try:
        text = base64.b64decode(node_id + "=" * (-len(node_id) % 4), altchars=b"-_", validate=True)
        value = jsoncodec.loads(text)
    except (binascii.Error, ValueError):
        raise problem from None
    if not _valid_key(value, view):
        raise problem
    return tuple(value)


def _valid_param(value: Any, kind: str) -> bool:
    if kind == _S:
        return isinstance(value, str)
    if kind == _I:
        return type(value) is int and is_nonneg_safe_integer(value)
    return value in TRACE_GROUPS


def _valid_key(value: Any, view: str) -> bool:
    if not isinstance(value, list) or len(value) < 2 or value[0] != view:
        return False
    kind, params = value[1], value[2:]
    if kind == "err":
        return _valid_err(params, view)
    spec = _KINDS[view].get(kind) if isinstance(kind, str) else None
    if spec is None or len(spec) != len(params):
        return False
    if not all(_valid_param(v, k) for v, k in zip(params, spec)):
        return False
    if kind.endswith("more") and kind != "amore":
        size = LINK_PAGE if kind == "cmore" else PAGE
        return params[-1] > 0 and params[-1] % size == 0
    return kind != "amore" or params[1] > 0


def _valid_err(params: list[Any], view: str) -> bool:
    # [parent key or null, root args]: enough to place the error node (it has no children).
    if len(params) != 2 or not isinstance(params[1], list):
        return False
    parent = params[0]
    return parent is None or _valid_key(parent, view)


# -- formatting ------------------------------------------------------------------------------


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    return truncate(collapse_whitespace(text), limit)


def iso_time(ms: Any) -> str | None:
    if not is_number(ms):
        return None
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def relative_time(ms: Any, now: float | None = None) -> str | None:
    """"just now", "5 min ago", "3 h ago", "12 d ago", else the UTC date."""
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
    return None if iso is None else iso[:10]


def clock_time(ms: Any) -> str | None:
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


def type_text(value: Any) -> str:
    return value if isinstance(value, str) else jsoncodec.dumps(value).decode("utf-8", "replace")


# -- what a session looks like ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The part of a log the labels need; projected right after each load, never retained."""

    title: str | None
    first_message: str | None
    events: int | None


def _seed(header: Header) -> int:
    return int(header.seed_length) if is_nonneg_safe_integer(header.seed_length) else 0


def _first_text(events: Iterable[Event]) -> str | None:
    for event in events:
        if event.type == "user/message":
            text = extract_text(event)
            if text:
                return text
    return None


def first_user_text(header: Header, events: Sequence[Event]) -> str | None:
    # A forked or sub-agent log starts with its seed (the parent's history), whose first message
    # is the parent's; the first message after the seed is what this session was about.
    seed = _seed(header)
    for start in ((seed, 0) if seed else (0,)):
        # by index: a live log builds only the events it reads
        text = _first_text(events[index] for index in range(start, len(events)))
        if text:
            return text
    return None


def _title_text(session_id: str, title_event: Event | None) -> str | None:
    try:
        snapshot = title_from(session_id, title_event)
    except QueryError:  # a malformed title event just falls back, like a rejected readTitles entry
        return None
    if snapshot is None or not isinstance(snapshot.title, str):
        return None
    return snapshot.title or None


def project(session_id: str, header: Header, events: Sequence[Event], title_event: Event | None) -> SessionInfo:
    return SessionInfo(_title_text(session_id, title_event), first_user_text(header, events), len(events))


def project_windows(session_id: str, read: Callable[[int, int], Window]) -> SessionInfo:
    """The label of a persisted log read through ``inspect_window`` (``read(first, last)``): the
    backend verifies the log once per revision and knows where its title is, so a label costs a
    few small windows instead of the whole log. The first message is looked for among the first
    LABEL_EVENTS events after the seed (then of the log), not further."""
    head = read(0, LABEL_EVENTS - 1)
    seed = _seed(head.meta)
    after_seed = head.events[seed:] if seed < LABEL_EVENTS else read(seed, seed + LABEL_EVENTS - 1).events
    first = _first_text(after_seed) or (_first_text(head.events) if seed else None)
    found = None if head.title is None else title_window(read, head.title)
    title_event = None if found is None else found.events[0]
    return SessionInfo(_title_text(session_id, title_event), first, head.length)


@dataclass(frozen=True, slots=True)
class Lag:
    """Live-versus-persisted event counts of a session that is both."""

    live: int
    persisted: int | None  # None: unknown

    @property
    def lagging(self) -> bool:
        return self.persisted is not None and self.persisted < self.live


class Ctx:
    """One request: the runtime, its cancellation token and the view."""

    def __init__(self, rt: Runtime, token: CancelToken | None, view: str) -> None:
        self.rt = rt
        self.token = token
        self.view = view

    # -- service calls -----------------------------------------------------------------------

    def corpus(self) -> list[Record]:
        return self.rt.service.corpus(self.token)

    def corpus_or_none(self) -> list[Record] | None:
        """The corpus for finding a parent; None when it cannot be listed (cancellation still
        raises), so an unlistable corpus makes a node a root instead of failing the reveal."""
        try:
            return self.corpus()
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            return None

    def load(self, session_id: str) -> Loaded:
        return self.rt.service.load(session_id, self.token)

    def infos(self, records: Sequence[Record]) -> dict[str, SessionInfo]:
        """Labels for the records of one level. Live logs come from memory (no I/O); each
        persisted-only log is inspected once, at most ``persistedInspectConcurrency`` at a time,
        and projected to its small SessionInfo before the worker claims the next id (the
        readTitles pattern, semantics.md §3.8). A failure only loses that label."""
        out: dict[str, SessionInfo] = {}
        pending: list[str] = []
        for record in records:
            sid = record.header.id
            snapshot = self.rt.store.snapshot(sid) if record.live else None
            if snapshot is not None:
                title = None if snapshot.title_seq is None else snapshot.events[snapshot.title_seq]
                out[sid] = project(sid, snapshot.header, snapshot.events, title)
            elif record.persisted:
                pending.append(sid)
        binding = self.rt.binding.current()
        if not pending or binding is None:
            return out
        backend, token = binding.backend, self.token
        claims: Iterator[str] = iter(pending)
        lock = threading.Lock()
        # A persisted label costs a whole-log read the first time a log is seen at a revision (then
        # a few window reads); a page of long logs could keep the sidebar waiting for many
        # seconds. Past the budget, the rest keep their id as label.
        deadline = _time.monotonic() + LABEL_BUDGET_SECONDS

        def claim() -> str | None:
            with lock:
                if (token is not None and token.cancelled) or _time.monotonic() > deadline:
                    return None
                return next(claims, None)

        def worker() -> None:
            while (sid := claim()) is not None:
                try:
                    window = getattr(backend, "inspect_window", None)
                    if window is not None:
                        out[sid] = project_windows(sid, lambda a, b: window(sid, a, b, token))
                        continue
                    inspection = backend.inspect(sid, token)
                    out[sid] = project(sid, inspection.meta, inspection.events,
                                       last_title_event(inspection.events))
                except Exception:  # noqa: BLE001 - the label falls back to the id
                    continue

        count = min(max(1, self.rt.service.inspect_concurrency), len(pending))
        workers = [threading.Thread(target=worker, daemon=True) for _ in range(count)]
        for thread in workers:
            thread.start()
        for thread in workers:  # started inspections are awaited, as every backend call is
            thread.join()
        check_cancelled(token)
        return out

    def lags(self, records: Sequence[Record]) -> dict[str, Lag]:
        """"lagging" = live and persisted, and the persisted copy holds fewer events than the live
        log. Cheap first: the checkpointer already knows how many events it holds in the current
        binding for every session it flushed (that is every live session in auto mode). Only a
        session it has not met under this binding (manual mode, read-only mount, first 200 ms)
        costs one ``stored_count`` (cached by the JSONL backend); a failure there just leaves the
        badge off."""
        both = [r.header.id for r in records if r.live and r.persisted]
        if not both:
            return {}
        lengths = self.rt.store.lengths()
        binding = self.rt.binding.current()
        known = self._checkpointed_counts(binding)
        out: dict[str, Lag] = {}
        for sid in both:
            if sid not in lengths:
                continue
            count = known.get(sid)
            if count is None and binding is not None:
                check_cancelled(self.token)
                try:
                    count = binding.backend.stored_count(sid)
                except Exception:  # noqa: BLE001 - unknown: no badge
                    count = None
            out[sid] = Lag(lengths[sid], count)
        return out

    def _checkpointed_counts(self, binding: Any) -> dict[str, int]:
        return {} if binding is None else self.rt.checkpointer.persisted_counts(binding.identity)

    # -- node builders ---------------------------------------------------------------------

    def id(self, kind: str, *params: Any) -> str:
        return encode_id((self.view, kind, *params))

    def key(self, kind: str, *params: Any) -> Key:
        return (self.view, kind, *params)

    def session_node(
        self,
        key: Key,
        record: Record,
        info: SessionInfo | None,
        lag: Lag | None,
        *,
        collapsible: str = "collapsed",
        role: str | None = None,
    ) -> TreeNode:
        header = record.header
        sid = header.id
        label = None
        if info is not None:
            label = info.title or info.first_message
        badges = []
        if record.live:
            badges.append("live")
        if record.persisted:
            badges.append("persisted")
        if lag is not None and lag.lagging:
            badges.append("lagging")
        sub = header.origin == "subagent" or header.parent_session is not UNSET
        # Sub-agent shape first (it says where the session came from); liveness is in the badges.
        icon = "type-hierarchy-sub" if sub else "circle-filled" if record.live else "history"
        lines = [one_line(label, 200)] if label else []
        lines.append(f"id: {sid}")
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
            label=one_line(label, LABEL_CHARS) if label else sid,
            collapsible=collapsible,
            description=join(role, relative_time(header.created_at), *badges),
            tooltip="\n".join(lines),
            icon=icon,
            contextValue="session.live" if record.live else "session.persisted",
            resource=TreeResource(sessionId=sid),
        )

    def event_node(self, key: Key, session_id: str, seq: int, event: Event, surface: str,
                   role: str | None = None) -> TreeNode:
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
        )

    def more_node(self, key: Key, remaining: int, noun: str) -> TreeNode:
        return TreeNode(
            id=encode_id(key),
            label="More…",
            collapsible="collapsed",
            description=f"{remaining} more {noun}",
            icon="ellipsis",
            contextValue="more",
        )

    def error_node(self, exc: QueryError, parent: Key | None, root_args: list[Any]) -> TreeNode:
        node = TreeNode(
            id=encode_id((self.view, "err", None if parent is None else list(parent), root_args)),
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


def open_event(session_id: str, seq: int) -> TreeCommand:
    return TreeCommand(title="Open Event", command=OPEN_EVENT, arguments=[{"sessionId": session_id, "seq": seq}])


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
    summary = one_line(summary, SUMMARY_CHARS)
    if not summary:
        return f"#{seq} {etype}"
    return f'#{seq} {etype} "{summary}"' if event.type in _QUOTED else f"#{seq} {etype} {summary}"


# -- paging ----------------------------------------------------------------------------------


def page_bounds(total: int, offset: int, size: int = PAGE) -> tuple[int, int, bool]:
    """(start, end, more): the slice shown at ``offset`` and whether a "more" node follows.
    Pages have a fixed size, so the page of an entry follows from its index alone."""
    if total - offset <= size:
        return offset, total, False
    return offset, offset + size, True


def page_offset(index: int, size: int = PAGE) -> int:
    return (index // size) * size


# -- views -----------------------------------------------------------------------------------


class View:
    """One view: its roots, the children of each kind, and the parent of each kind."""

    def roots(self, ctx: Ctx, args: dict[str, Any]) -> list[TreeNode]:
        raise NotImplementedError

    def root_args(self, args: dict[str, Any]) -> list[Any]:
        return []

    def children(self, ctx: Ctx, key: Key) -> list[TreeNode]:
        handler = getattr(self, "children_" + key[1], None)
        return [] if handler is None else handler(ctx, *key[2:])

    def parent(self, ctx: Ctx, key: Key) -> Key | None:
        if key[1] == "err":
            parent = key[2]
            return None if parent is None else tuple(parent)
        return getattr(self, "parent_" + key[1])(ctx, *key[2:])


def require_args(args: Any, fields: Sequence[str]) -> dict[str, Any]:
    if not isinstance(args, dict):
        raise invalid("args must be an object")
    for name in fields:
        if name == "seq":
            if not is_number(args.get("seq")):
                raise invalid("args.seq must be a number")
        elif not isinstance(args.get(name), str):
            raise invalid(f"args.{name} must be a string")
    return args


class EventList:
    """A session's events, paged. Shared by the events view (roots) and the sessions view's
    "Events" group: ``container`` is the key the first page hangs under (None for roots)."""

    @staticmethod
    def nodes(ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
        loaded = ctx.load(session_id)
        fold = loaded.fold()  # INVALID_SURFACE, as listEvents reports it
        total = len(loaded.events)
        start, end, more = page_bounds(total, offset)
        nodes = [
            ctx.event_node(ctx.key("e", session_id, seq), session_id, seq, loaded.events[seq], fold.surface(seq))
            for seq in range(start, end)
        ]
        if more:
            nodes.append(ctx.more_node(ctx.key("emore", session_id, end), total - end, "events"))
        return nodes

    @staticmethod
    def holder(ctx: Ctx, session_id: str, offset: int, container: Key | None) -> Key | None:
        """The key whose children are the page at ``offset``."""
        return container if offset == 0 else ctx.key("emore", session_id, offset)


class SessionsView(View):
    """The corpus, newest first. A session expands to two fixed groups: "Events" (its raw log,
    paged) and "Lineage" (a link to its parent and links to its direct children)."""

    def roots(self, ctx: Ctx, args: dict[str, Any]) -> list[TreeNode]:
        return self._page(ctx, 0)

    def _page(self, ctx: Ctx, offset: int) -> list[TreeNode]:
        records = ctx.corpus()
        start, end, more = page_bounds(len(records), offset)
        shown = records[start:end]
        infos = ctx.infos(shown)
        lags = ctx.lags(shown)
        nodes = [
            ctx.session_node(ctx.key("s", r.header.id), r, infos.get(r.header.id), lags.get(r.header.id))
            for r in shown
        ]
        if more:
            nodes.append(ctx.more_node(ctx.key("more", end), len(records) - end, "sessions"))
        return nodes

    def children_more(self, ctx: Ctx, offset: int) -> list[TreeNode]:
        return self._page(ctx, offset)

    def parent_more(self, ctx: Ctx, offset: int) -> Key | None:
        return None if offset == PAGE else ctx.key("more", offset - PAGE)

    def children_s(self, ctx: Ctx, session_id: str) -> list[TreeNode]:
        # One listing: the Lineage group says up front whether it has anything to show.
        records = ctx.corpus()
        record = next((r for r in records if r.header.id == session_id), None)
        if record is None:
            raise QueryError(errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id)
        children = lineage.children_index(records).get(session_id, [])
        has_parent = record.header.parent_session is not UNSET
        summary = join("parent" if has_parent else None,
                       f"{len(children)} {'child' if len(children) == 1 else 'children'}" if children else None)
        resource = TreeResource(sessionId=session_id)
        return [
            TreeNode(id=ctx.id("events", session_id), label="Events", collapsible="collapsed",
                     icon="list-unordered", contextValue="group.events", resource=resource,
                     tooltip="Every raw event of the session with its surface status"),
            TreeNode(id=ctx.id("lineage", session_id), label="Lineage",
                     collapsible="collapsed" if summary else "none",
                     description=summary or "(none)", icon="type-hierarchy", contextValue="group.lineage",
                     resource=resource, tooltip="Parent and direct children (forks, resumes, sub-agents)"),
        ]

    def parent_s(self, ctx: Ctx, session_id: str) -> Key | None:
        # Session ids hold no position (a new session shifts every page), so finding the page
        # costs one listing. A session that left the corpus is reported as a root.
        records = ctx.corpus_or_none()
        if records is None:
            return None
        index = next((i for i, r in enumerate(records) if r.header.id == session_id), None)
        if index is None:
            return None
        offset = page_offset(index)
        return None if offset == 0 else ctx.key("more", offset)

    # Events group and its pages.
    def children_events(self, ctx: Ctx, session_id: str) -> list[TreeNode]:
        return EventList.nodes(ctx, session_id, 0)

    def parent_events(self, ctx: Ctx, session_id: str) -> Key:
        return ctx.key("s", session_id)

    def children_emore(self, ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
        return EventList.nodes(ctx, session_id, offset)

    def parent_emore(self, ctx: Ctx, session_id: str, offset: int) -> Key | None:
        return EventList.holder(ctx, session_id, offset - PAGE, ctx.key("events", session_id))

    def parent_e(self, ctx: Ctx, session_id: str, seq: int) -> Key | None:
        return EventList.holder(ctx, session_id, page_offset(seq), ctx.key("events", session_id))

    # Lineage group: parent link, then the direct children, paged.
    def children_lineage(self, ctx: Ctx, session_id: str) -> list[TreeNode]:
        records = ctx.corpus()
        by_id = {r.header.id: r for r in records}
        record = by_id.get(session_id)
        if record is None:
            raise QueryError(errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id)
        nodes: list[TreeNode] = []
        parent_id = record.header.parent_session
        parent = by_id.get(parent_id) if parent_id is not UNSET else None
        children = lineage.children_index(records).get(session_id, [])
        start, end, more = page_bounds(len(children), 0, LINK_PAGE)
        shown = children[start:end]
        infos = ctx.infos(([parent] if parent is not None else []) + shown)
        lags = ctx.lags(([parent] if parent is not None else []) + shown)
        if parent_id is not UNSET:
            key = ctx.key("parent", session_id)
            if parent is None:
                nodes.append(unresolved_node(key, parent_id))
            else:
                nodes.append(ctx.session_node(key, parent, infos.get(parent_id), lags.get(parent_id),
                                              collapsible="none", role="parent"))
        nodes += self._child_links(ctx, session_id, shown, infos, lags)
        if more:
            nodes.append(ctx.more_node(ctx.key("cmore", session_id, end), len(children) - end, "children"))
        return nodes

    def _child_links(self, ctx: Ctx, session_id: str, shown: Sequence[Record],
                     infos: dict[str, SessionInfo], lags: dict[str, Lag]) -> list[TreeNode]:
        return [
            ctx.session_node(ctx.key("child", session_id, r.header.id), r, infos.get(r.header.id),
                             lags.get(r.header.id), collapsible="none",
                             role="sub-agent" if r.header.origin == "subagent" else "child")
            for r in shown
        ]

    def parent_lineage(self, ctx: Ctx, session_id: str) -> Key:
        return ctx.key("s", session_id)

    def parent_parent(self, ctx: Ctx, session_id: str) -> Key:
        return ctx.key("lineage", session_id)

    def children_cmore(self, ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
        records = ctx.corpus()
        children = lineage.children_index(records).get(session_id, [])
        start, end, more = page_bounds(len(children), offset, LINK_PAGE)
        shown = children[start:end]
        nodes = self._child_links(ctx, session_id, shown, ctx.infos(shown), ctx.lags(shown))
        if more:
            nodes.append(ctx.more_node(ctx.key("cmore", session_id, end), len(children) - end, "children"))
        return nodes

    def parent_cmore(self, ctx: Ctx, session_id: str, offset: int) -> Key:
        if offset == LINK_PAGE:
            return ctx.key("lineage", session_id)
        return ctx.key("cmore", session_id, offset - LINK_PAGE)

    def parent_child(self, ctx: Ctx, session_id: str, child_id: str) -> Key | None:
        records = ctx.corpus_or_none()
        if records is None:
            return ctx.key("lineage", session_id)
        siblings = lineage.children_index(records).get(session_id, [])
        index = next((i for i, r in enumerate(siblings) if r.header.id == child_id), 0)
        offset = page_offset(index, LINK_PAGE)
        return ctx.key("lineage", session_id) if offset == 0 else ctx.key("cmore", session_id, offset)


def unresolved_node(key: Key, parent_id: Any) -> TreeNode:
    pid = type_text(parent_id)
    return TreeNode(
        id=encode_id(key),
        label=f"parent \"{pid}\" not in corpus",
        collapsible="none",
        description="unresolved",
        tooltip=f'The parent session "{pid}" is neither live nor in the mounted persistence, so '
                "the lineage above this point is unknown.",
        icon="warning",
        contextValue="lineage.unresolved",
        resource=TreeResource(sessionId=pid),
    )


class EventsView(View):
    """Every raw event of one session (args.sessionId) with its surface status, paged."""

    def root_args(self, args: dict[str, Any]) -> list[Any]:
        return [args["sessionId"]]

    def roots(self, ctx: Ctx, args: dict[str, Any]) -> list[TreeNode]:
        return EventList.nodes(ctx, args["sessionId"], 0)

    def children_emore(self, ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
        return EventList.nodes(ctx, session_id, offset)

    def parent_emore(self, ctx: Ctx, session_id: str, offset: int) -> Key | None:
        return EventList.holder(ctx, session_id, offset - PAGE, None)

    def parent_e(self, ctx: Ctx, session_id: str, seq: int) -> Key | None:
        return EventList.holder(ctx, session_id, page_offset(seq), None)


class LineageView(View):
    """Lineage of args.sessionId. Roots, top to bottom: the "parent … not in corpus" node when the
    chain is incomplete, the ancestors from the root down to the immediate parent as a flat list
    (reads like a breadcrumb and keeps the target one level deep however long the chain is), then
    the target, expanded, whose descendant tree opens lazily. Above ANCESTOR_BLOCK ancestors, the
    oldest ones fold into an "earlier ancestors" node at the top (it pages the same way)."""

    def root_args(self, args: dict[str, Any]) -> list[Any]:
        return [args["sessionId"]]

    def _trace(self, ctx: Ctx, target: str) -> tuple[list[Record], dict[str, Record], list[Record], Any]:
        records = ctx.corpus()
        check_cancelled(ctx.token)
        result = lineage.trace(records, target)  # SESSION_NOT_FOUND, INVALID_LINEAGE (cycles)
        by_id = {r.header.id: r for r in records}
        ancestors: list[Record] = []  # immediate parent first, as the trace lists them
        parent = by_id[target].header.parent_session
        for _ in result.ancestors:
            ancestors.append(by_id[parent])
            parent = by_id[parent].header.parent_session
        unresolved = None if result.complete else result.unresolvedParentId
        return records, by_id, ancestors[::-1], unresolved

    def roots(self, ctx: Ctx, args: dict[str, Any]) -> list[TreeNode]:
        target = args["sessionId"]
        records, by_id, ancestors, unresolved = self._trace(ctx, target)
        children = lineage.children_index(records)
        nodes: list[TreeNode] = []
        if unresolved is not None:
            nodes.append(unresolved_node(ctx.key("u", target, unresolved), unresolved))
        block = self._block(ctx, target, ancestors, len(ancestors))
        shown = [r for r in block if isinstance(r, Record)]
        record = by_id[target]
        infos = ctx.infos(shown + [record])
        lags = ctx.lags(shown + [record])
        nodes += self._ancestor_nodes(ctx, target, block, ancestors, infos, lags, unresolved is None)
        nodes.append(ctx.session_node(
            ctx.key("t", target), record, infos.get(target), lags.get(target),
            collapsible="expanded" if children.get(target) else "none", role="target"))
        return nodes

    @staticmethod
    def _block(ctx: Ctx, target: str, ancestors: list[Record], end: int) -> list[Any]:
        """Ancestors [0, end) root-first, as shown at one level: all of them, or an "earlier"
        marker (the int where the shown run starts) then the newest ANCESTOR_BLOCK - 1."""
        if end <= ANCESTOR_BLOCK:
            return list(ancestors[:end])
        low = end - (ANCESTOR_BLOCK - 1)
        return [low] + list(ancestors[low:end])

    def _ancestor_nodes(self, ctx: Ctx, target: str, block: list[Any], ancestors: list[Record],
                        infos: dict[str, SessionInfo], lags: dict[str, Lag], complete: bool) -> list[TreeNode]:
        nodes = []
        # The top ancestor is "root" only when the chain is complete; otherwise its parent is unknown.
        root_id = ancestors[0].header.id if ancestors and complete else None
        for item in block:
            if isinstance(item, int):
                nodes.append(TreeNode(id=ctx.id("amore", target, item), label="Earlier ancestors…",
                                      collapsible="collapsed", description=f"{item} more ancestors",
                                      icon="ellipsis", contextValue="more"))
                continue
            sid = item.header.id
            role = "parent" if sid == ancestors[-1].header.id else "root" if sid == root_id else "ancestor"
            nodes.append(ctx.session_node(ctx.key("a", target, sid), item, infos.get(sid), lags.get(sid),
                                          collapsible="none", role=role))
        return nodes

    def children_amore(self, ctx: Ctx, target: str, end: int) -> list[TreeNode]:
        _, _, ancestors, unresolved = self._trace(ctx, target)
        block = self._block(ctx, target, ancestors, min(end, len(ancestors)))
        shown = [r for r in block if isinstance(r, Record)]
        return self._ancestor_nodes(ctx, target, block, ancestors, ctx.infos(shown), ctx.lags(shown),
                                    unresolved is None)

    def _ancestor_container(self, ctx: Ctx, target: str, index: int | None, marker: int | None) -> Key | None:
        """The key whose children hold ancestor ``index`` (or the "earlier" node ``marker``)."""
        try:
            _, _, ancestors, _ = self._trace(ctx, target)
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            return None
        end, container = len(ancestors), None
        while end > ANCESTOR_BLOCK:
            low = end - (ANCESTOR_BLOCK - 1)
            if marker == low or (index is not None and index >= low):
                return container
            container, end = ctx.key("amore", target, low), low
        return container

    def parent_a(self, ctx: Ctx, target: str, ancestor: str) -> Key | None:
        try:
            _, _, ancestors, _ = self._trace(ctx, target)
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            return None
        index = next((i for i, r in enumerate(ancestors) if r.header.id == ancestor), None)
        return None if index is None else self._ancestor_container(ctx, target, index, None)

    def parent_amore(self, ctx: Ctx, target: str, end: int) -> Key | None:
        return self._ancestor_container(ctx, target, None, end)

    def parent_t(self, ctx: Ctx, target: str) -> None:
        return None

    def parent_u(self, ctx: Ctx, target: str, parent_id: str) -> None:
        return None

    # Descendants, lazily: one listing per level.
    def _descendants(self, ctx: Ctx, target: str, parent_id: str, offset: int) -> list[TreeNode]:
        records = ctx.corpus()
        groups = lineage.children_index(records)
        children = groups.get(parent_id, [])
        start, end, more = page_bounds(len(children), offset)
        shown = children[start:end]
        infos, lags = ctx.infos(shown), ctx.lags(shown)
        nodes = [
            ctx.session_node(ctx.key("d", target, r.header.id), r, infos.get(r.header.id), lags.get(r.header.id),
                             collapsible="collapsed" if groups.get(r.header.id) else "none",
                             role="sub-agent" if r.header.origin == "subagent" else None)
            for r in shown
        ]
        if more:
            nodes.append(ctx.more_node(ctx.key("dmore", target, parent_id, end), len(children) - end, "children"))
        return nodes

    def children_t(self, ctx: Ctx, target: str) -> list[TreeNode]:
        return self._descendants(ctx, target, target, 0)

    def children_d(self, ctx: Ctx, target: str, session_id: str) -> list[TreeNode]:
        return self._descendants(ctx, target, session_id, 0)

    def children_dmore(self, ctx: Ctx, target: str, parent_id: str, offset: int) -> list[TreeNode]:
        return self._descendants(ctx, target, parent_id, offset)

    def _holder(self, ctx: Ctx, target: str, parent_id: str) -> Key:
        return ctx.key("t", target) if parent_id == target else ctx.key("d", target, parent_id)

    def parent_dmore(self, ctx: Ctx, target: str, parent_id: str, offset: int) -> Key:
        if offset == PAGE:
            return self._holder(ctx, target, parent_id)
        return ctx.key("dmore", target, parent_id, offset - PAGE)

    def parent_d(self, ctx: Ctx, target: str, session_id: str) -> Key | None:
        records = ctx.corpus_or_none()
        if records is None:
            return None
        record = next((r for r in records if r.header.id == session_id), None)
        if record is None or not isinstance(record.header.parent_session, str):
            return None
        parent_id = record.header.parent_session
        siblings = lineage.children_index(records).get(parent_id, [])
        index = next((i for i, r in enumerate(siblings) if r.header.id == session_id), 0)
        offset = page_offset(index)
        return self._holder(ctx, target, parent_id) if offset == 0 else ctx.key("dmore", target, parent_id, offset)


class EventTraceView(View):
    """The relationships of one event (args {sessionId, seq}). Roots: the target, then always the
    five groups in a fixed order (a stable layout; an empty group reads "(none)" and cannot be
    expanded, which answers "is there any?" without a click). Each group child is a link to its
    event (resource + dshQuery.openEvent). One load + one fold per request."""

    def root_args(self, args: dict[str, Any]) -> list[Any]:
        return [args["sessionId"], args["seq"]]

    def _trace(self, ctx: Ctx, session_id: str, seq: Any) -> tuple[Loaded, int, Any]:
        loaded = ctx.load(session_id)
        check_cancelled(ctx.token)
        index = target_index(loaded, seq)  # EVENT_NOT_FOUND before the fold, as in traceEvent
        loaded = replace(loaded, known_fold=loaded.fold())  # fold a persisted log once, not twice
        return loaded, index, trace.trace_event(loaded, index)

    @staticmethod
    def _groups(result: Any) -> dict[str, list[int]]:
        return {
            "replacedBy": [] if result.replacedBy is UNSET else [result.replacedBy],
            "chain": list(result.replacementChain),
            "replaced": list(result.replacedEventSeqs),
            "sources": [int(s) for s in result.sourceEventSeqs],
            "derived": list(result.derivedEventSeqs),
        }

    def roots(self, ctx: Ctx, args: dict[str, Any]) -> list[TreeNode]:
        session_id = args["sessionId"]
        loaded, seq, result = self._trace(ctx, session_id, args["seq"])
        fold = loaded.fold()
        nodes = [ctx.event_node(ctx.key("t", session_id, seq), session_id, seq, loaded.events[seq],
                                fold.surface(seq), role="target")]
        for name, seqs in self._groups(result).items():
            label, icon = TRACE_GROUPS[name]
            nodes.append(TreeNode(
                id=ctx.id("g", session_id, seq, name), label=label,
                collapsible="expanded" if seqs else "none",
                description=str(len(seqs)) if seqs else "(none)",
                icon=icon, contextValue=f"group.{name}",
                resource=TreeResource(sessionId=session_id, seq=seq),
            ))
        return nodes

    def _links(self, ctx: Ctx, session_id: str, seq: int, name: str, offset: int) -> list[TreeNode]:
        loaded, seq, result = self._trace(ctx, session_id, seq)
        fold = loaded.fold()
        seqs = self._groups(result)[name]
        start, end, more = page_bounds(len(seqs), offset)
        nodes = [
            ctx.event_node(ctx.key("l", session_id, seq, name, i, seqs[i]), session_id, seqs[i],
                           loaded.events[seqs[i]], fold.surface(seqs[i]))
            for i in range(start, end)
        ]
        if more:
            nodes.append(ctx.more_node(ctx.key("gmore", session_id, seq, name, end), len(seqs) - end, "events"))
        return nodes

    def children_g(self, ctx: Ctx, session_id: str, seq: int, name: str) -> list[TreeNode]:
        return self._links(ctx, session_id, seq, name, 0)

    def children_gmore(self, ctx: Ctx, session_id: str, seq: int, name: str, offset: int) -> list[TreeNode]:
        return self._links(ctx, session_id, seq, name, offset)

    def parent_t(self, ctx: Ctx, session_id: str, seq: int) -> None:
        return None

    def parent_g(self, ctx: Ctx, session_id: str, seq: int, name: str) -> None:
        return None

    def parent_gmore(self, ctx: Ctx, session_id: str, seq: int, name: str, offset: int) -> Key:
        if offset == PAGE:
            return ctx.key("g", session_id, seq, name)
        return ctx.key("gmore", session_id, seq, name, offset - PAGE)

    def parent_l(self, ctx: Ctx, session_id: str, seq: int, name: str, index: int, linked: int) -> Key:
        offset = page_offset(index)
        return ctx.key("g", session_id, seq, name) if offset == 0 else ctx.key("gmore", session_id, seq, name, offset)


_VIEWS: dict[str, tuple[View, tuple[str, ...]]] = {
    "sessions": (SessionsView(), ()),
    "events": (EventsView(), ("sessionId",)),
    "lineage": (LineageView(), ("sessionId",)),
    "eventTrace": (EventTraceView(), ("sessionId", "seq")),
}


def _view_of(params: dict[str, Any]) -> str:
    view = params.get("view")
    if not isinstance(view, str) or view not in _VIEWS:
        raise invalid(f"view must be one of {', '.join(VIEWS)}")
    return view


def _guarded(ctx: Ctx, parent: Key | None, root_args: list[Any], compute: Callable[[], list[TreeNode]]) -> list[TreeNode]:
    """Failures inside a view become one error node; cancellation stays a cancelled request."""
    try:
        return compute()
    except QueryError as exc:
        if exc.code == errors.ABORTED:
            raise
        return [ctx.error_node(exc, parent, root_args)]
    except Exception:  # noqa: BLE001 - a server bug: logged with its traceback, shown as a node
        log.exception("tree view %s failed", ctx.view)
        internal = QueryError(errors.INTERNAL, "internal server error (see the server log)")
        return [ctx.error_node(internal, parent, root_args)]


def tree_children(rt: Runtime, params: dict[str, Any], token: CancelToken) -> dict[str, Any]:
    view = _view_of(params)
    handler, required = _VIEWS[view]
    ctx = Ctx(rt, token, view)
    node_id = params.get("nodeId")
    if node_id is None:
        # Args are read only for roots: a node id carries its own (it is self-describing).
        args = require_args(params.get("args", {}) if required else {}, required)
        root_args = handler.root_args(args)
        return {"nodes": _guarded(ctx, None, root_args, lambda: handler.roots(ctx, args))}
    key = decode_id(view, node_id)
    if key[1] == "err":
        return {"nodes": []}
    return {"nodes": _guarded(ctx, key, [], lambda: handler.children(ctx, key))}


def tree_parent(rt: Runtime, params: dict[str, Any], token: CancelToken) -> dict[str, Any]:
    view = _view_of(params)
    key = decode_id(view, params.get("nodeId"))
    handler, _ = _VIEWS[view]
    parent = handler.parent(Ctx(rt, token, view), key)
    return {} if parent is None else {"nodeId": encode_id(parent)}
