"""The sessions view: the corpus, newest first. A session expands to two fixed groups: "Events"
(its raw log, paged) and "Lineage" (a link to its parent and links to its direct children).
With ``args.groupBy`` ("agent" or "workspace") the roots are groups of sessions instead
(``groups``); every kind then carries the grouping as its scope."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from ... import errors
from ...errors import QueryError
from ...query import lineage
from ...query.loaded import Record
from . import groups
from .context import Ctx
from .events import event_page, page_holder
from .groups import GROUP_VALUE, GROUPING
from .ids import INDEX, LINK_PAGE, PAGE, SESSION, Args, Key, page_bounds, page_offset, page_start
from .kinds import Kind, View
from .labels import Lag, SessionInfo
from .nodes import TreeNode, TreeResource, join, more_node, session_node, unresolved_node


def _not_found(session_id: str) -> QueryError:
    return QueryError(
        errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id
    )


# -- the corpus, paged -----------------------------------------------------------------------


def _page(ctx: Ctx, offset: int) -> list[TreeNode]:
    records = ctx.corpus()
    start, end, more = page_bounds(len(records), offset)
    shown = records[start:end]
    infos = ctx.infos(shown)
    lags = ctx.lags(shown)
    nodes = [
        session_node(ctx.key("s", r.header.id), r, infos.get(r.header.id), lags.get(r.header.id))
        for r in shown
    ]
    if more:
        nodes.append(more_node(ctx.key("more", end), len(records) - end, "sessions"))
    return nodes


def _more_children(ctx: Ctx, offset: int) -> list[TreeNode]:
    return _page(ctx, offset) if ctx.scope is None else groups.groups_page(ctx, offset)


def _roots(ctx: Ctx, args: Args) -> list[TreeNode]:
    return _more_children(ctx, 0)


def _more_parent(ctx: Ctx, offset: int) -> Key | None:
    return None if offset == PAGE else ctx.key("more", offset - PAGE)


# -- a session and its two groups ------------------------------------------------------------


def _session_children(ctx: Ctx, session_id: str) -> list[TreeNode]:
    # One listing: the Lineage group says up front whether it has anything to show.
    records = ctx.corpus()
    record = next((r for r in records if r.header.id == session_id), None)
    if record is None:
        raise _not_found(session_id)
    children = lineage.children_index(records).get(session_id, [])
    has_parent = record.header.parent_session is not UNSET
    count = f"{len(children)} {'child' if len(children) == 1 else 'children'}"
    summary = join("parent" if has_parent else None, count if children else None)
    resource = TreeResource(sessionId=session_id)
    return [
        TreeNode(
            id=ctx.id("events", session_id),
            label="Events",
            collapsible="collapsed",
            icon="list-unordered",
            contextValue="group.events",
            resource=resource,
            tooltip="Every raw event of the session with its surface status",
        ),
        TreeNode(
            id=ctx.id("lineage", session_id),
            label="Lineage",
            collapsible="collapsed" if summary else "none",
            description=summary or "(none)",
            icon="type-hierarchy",
            contextValue="group.lineage",
            resource=resource,
            tooltip="Parent and direct children (forks, resumes, sub-agents)",
        ),
    ]


def _session_parent(ctx: Ctx, session_id: str) -> Key | None:
    if ctx.scope is not None:
        return groups.session_parent(ctx, session_id)
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


def _group_parent(ctx: Ctx, session_id: str) -> Key:
    return ctx.key("s", session_id)


# -- the Events group and its pages ----------------------------------------------------------


def _events_children(ctx: Ctx, session_id: str) -> list[TreeNode]:
    return event_page(ctx, session_id, 0)


def _emore_parent(ctx: Ctx, session_id: str, offset: int) -> Key | None:
    return page_holder(ctx, session_id, offset - PAGE, ctx.key("events", session_id))


def _e_parent(ctx: Ctx, session_id: str, seq: int) -> Key | None:
    return page_holder(ctx, session_id, page_offset(seq), ctx.key("events", session_id))


# -- the Lineage group: parent link, then the direct children, paged --------------------------


def _lineage_children(ctx: Ctx, session_id: str) -> list[TreeNode]:
    records = ctx.corpus()
    by_id = {r.header.id: r for r in records}
    record = by_id.get(session_id)
    if record is None:
        raise _not_found(session_id)
    nodes: list[TreeNode] = []
    parent_id = record.header.parent_session
    parent = by_id.get(parent_id) if parent_id is not UNSET else None
    children = lineage.children_index(records).get(session_id, [])
    start, end, more = page_bounds(len(children), 0, LINK_PAGE)
    shown = children[start:end]
    labelled = ([parent] if parent is not None else []) + shown
    infos, lags = ctx.infos(labelled), ctx.lags(labelled)
    if parent_id is not UNSET:
        key = ctx.key("parent", session_id)
        if parent is None:
            nodes.append(unresolved_node(key, parent_id))
        else:
            nodes.append(
                session_node(
                    key,
                    parent,
                    infos.get(parent_id),
                    lags.get(parent_id),
                    collapsible="none",
                    role="parent",
                )
            )
    nodes += _child_links(ctx, session_id, shown, infos, lags)
    if more:
        nodes.append(more_node(ctx.key("cmore", session_id, end), len(children) - end, "children"))
    return nodes


def _child_links(
    ctx: Ctx,
    session_id: str,
    shown: Sequence[Record],
    infos: dict[str, SessionInfo],
    lags: dict[str, Lag],
) -> list[TreeNode]:
    return [
        session_node(
            ctx.key("child", session_id, r.header.id),
            r,
            infos.get(r.header.id),
            lags.get(r.header.id),
            collapsible="none",
            role="sub-agent" if r.header.origin == "subagent" else "child",
        )
        for r in shown
    ]


def _parent_link_parent(ctx: Ctx, session_id: str) -> Key:
    return ctx.key("lineage", session_id)


def _cmore_children(ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
    records = ctx.corpus()
    children = lineage.children_index(records).get(session_id, [])
    start, end, more = page_bounds(len(children), offset, LINK_PAGE)
    shown = children[start:end]
    nodes = _child_links(ctx, session_id, shown, ctx.infos(shown), ctx.lags(shown))
    if more:
        nodes.append(more_node(ctx.key("cmore", session_id, end), len(children) - end, "children"))
    return nodes


def _cmore_parent(ctx: Ctx, session_id: str, offset: int) -> Key:
    if offset == LINK_PAGE:
        return ctx.key("lineage", session_id)
    return ctx.key("cmore", session_id, offset - LINK_PAGE)


def _child_parent(ctx: Ctx, session_id: str, child_id: str) -> Key | None:
    records = ctx.corpus_or_none()
    if records is None:
        return ctx.key("lineage", session_id)
    siblings = lineage.children_index(records).get(session_id, [])
    index = next((i for i, r in enumerate(siblings) if r.header.id == child_id), 0)
    offset = page_offset(index, LINK_PAGE)
    return ctx.key("lineage", session_id) if offset == 0 else ctx.key("cmore", session_id, offset)


G = GROUPING  # every kind may carry the grouping (kinds.Kind.scope)

VIEW = View(
    name="sessions",
    args=(),
    roots=_roots,
    kinds={
        # next page of the corpus (grouped: of the groups)
        "more": Kind((page_start(PAGE),), _more_parent, _more_children, G),
        "s": Kind((SESSION,), _session_parent, _session_children, G),  # a session
        "events": Kind((SESSION,), _group_parent, _events_children, G),  # its "Events" group
        "emore": Kind((SESSION, page_start(PAGE)), _emore_parent, event_page, G),  # next events
        "e": Kind((SESSION, INDEX), _e_parent, None, G),  # one event
        "lineage": Kind((SESSION,), _group_parent, _lineage_children, G),  # its "Lineage" group
        # link to the session's parent (or "not in corpus")
        "parent": Kind((SESSION,), _parent_link_parent, None, G),
        "child": Kind((SESSION, SESSION), _child_parent, None, G),  # (session, child): a link
        "cmore": Kind((SESSION, page_start(LINK_PAGE)), _cmore_parent, _cmore_children, G),
        # grouped trees only: a group (an agent, or a cwd or null), and its next sessions
        "group": Kind((GROUP_VALUE,), groups.group_parent, groups.group_children, G, True),
        "gmore": Kind(
            (GROUP_VALUE, page_start(PAGE)), groups.gmore_parent, groups.gmore_children, G, True
        ),
    },
    scope_arg="groupBy",
    scopes=groups.MODES,
)
