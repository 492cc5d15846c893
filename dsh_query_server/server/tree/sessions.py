"""The sessions view: the corpus, newest first, sub-agents nested under their parent
(``nesting``). A session expands to two fixed groups, "Events" (its raw log, paged) and
"Lineage" (a link to its parent and links to its direct children), then the sessions nested
under it, oldest first (paged). With ``args.groupBy`` ("agent" or "workspace") the roots are
groups of sessions instead (``groups``); every kind then carries the grouping as its scope."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from ... import errors
from ...errors import QueryError
from ...query import lineage
from ...query.loaded import Record
from . import groups
from .agents import kin_of, source_of
from .context import Ctx
from .events import event_page, page_holder
from .groups import GROUP_VALUE, GROUPING
from .ids import INDEX, LINK_PAGE, PAGE, SESSION, Args, Key, page_bounds, page_offset, page_start
from .kinds import Kind, View
from .labels import Lag, SessionInfo
from .nesting import forest, session_nodes
from .nodes import TreeNode, TreeResource, join, more_node, session_node, unresolved_node

# A session's level holds its two groups, then its nested sessions: those page one shorter than
# PAGE twice over, so the level stays within MAX_CHILDREN with its "more" node.
NESTED_PAGE = PAGE - 2


def _not_found(session_id: str) -> QueryError:
    return QueryError(
        errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id
    )


# -- the corpus, paged -----------------------------------------------------------------------


def _page(ctx: Ctx, offset: int) -> list[TreeNode]:
    tree = forest(ctx.corpus())
    records = tree.roots
    start, end, more = page_bounds(len(records), offset)
    nodes = session_nodes(ctx, records[start:end], tree)
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
    return [
        *_session_groups(ctx, session_id, records, record),
        *_nested(ctx, session_id, 0, records),
    ]


def _nested(
    ctx: Ctx, session_id: str, offset: int, records: list[Record] | None = None
) -> list[TreeNode]:
    """A page of the sessions nested under ``session_id``, and a "more" node after it."""
    tree = forest(ctx.corpus() if records is None else records)
    kids = tree.children.get(session_id, [])
    start, end, more = page_bounds(len(kids), offset, NESTED_PAGE)
    nodes = session_nodes(ctx, kids[start:end], tree)
    if more:
        nodes.append(more_node(ctx.key("smore", session_id, end), len(kids) - end, "sub-agents"))
    return nodes


def _smore_children(ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
    return _nested(ctx, session_id, offset)


def _smore_parent(ctx: Ctx, session_id: str, offset: int) -> Key:
    if offset == NESTED_PAGE:
        return ctx.key("s", session_id)
    return ctx.key("smore", session_id, offset - NESTED_PAGE)


def _session_groups(
    ctx: Ctx, session_id: str, records: list[Record], record: Record
) -> list[TreeNode]:
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
    # Session ids hold no position (a new session shifts every page), so finding the page
    # costs one listing. A session that left the corpus is reported as a root.
    records = ctx.corpus_or_none()
    if records is None:
        return None
    tree = forest(records)
    found = tree.position(session_id)
    if found is None:
        return None
    parent, index = found
    if parent is not None:
        offset = page_offset(index, NESTED_PAGE)
        return ctx.key("s", parent) if offset == 0 else ctx.key("smore", parent, offset)
    if ctx.scope is not None:
        return groups.session_parent(ctx, session_id, tree)
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
            role=kin_of(r.header, source_of(r.header)) or "child",
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
        # the next page of the sessions nested under a session
        "smore": Kind((SESSION, page_start(NESTED_PAGE)), _smore_parent, _smore_children, G),
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
