"""The sessions view grouped by agent or by workspace (``args.groupBy`` on the roots request).

The grouping is the scope (kinds.Kind.scope) of every id in a grouped tree: a session shown under
a group is ``["sessions", "s", id, "agent"]``, its Events group ``["sessions", "events", id,
"agent"]``, and so on, so each grouped tree has its own ids and every parent stays computable.
Groups hold only immutable facts in their ids (the agent, the cwd); positions come from one
listing. Groups are ordered by their newest session (the corpus order), sessions within a group
newest first, and both levels page like the ungrouped corpus."""

from __future__ import annotations

from collections.abc import Sequence

from ...query.loaded import Record
from .agents import AGENT_ICONS, agent_of, workspace_of
from .context import Ctx
from .ids import PAGE, Key, Param, one_of, page_bounds, page_offset
from .nodes import TreeNode, more_node, session_node

AGENT = "agent"
WORKSPACE = "workspace"
MODES = (AGENT, WORKSPACE)
GROUPING = one_of(MODES)
GROUP_VALUE = Param("group", lambda v: v is None or isinstance(v, str))

GroupValue = str | None


def value_of(mode: object, record: Record) -> GroupValue:
    return agent_of(record.header) if mode == AGENT else workspace_of(record.header)


def grouped(records: Sequence[Record], mode: object) -> dict[GroupValue, list[Record]]:
    """The partition of the corpus by ``mode``, groups in order of their newest session."""
    groups: dict[GroupValue, list[Record]] = {}
    for record in records:
        groups.setdefault(value_of(mode, record), []).append(record)
    return groups


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def group_node(ctx: Ctx, value: GroupValue, members: int) -> TreeNode:
    count = _plural(members, "session")
    if ctx.scope == AGENT:
        agent = value or "unknown"
        return TreeNode(
            id=ctx.id("group", value),
            label=agent,
            collapsible="collapsed",
            description=count,
            icon=AGENT_ICONS.get(agent, "history"),
            tooltip=f"Sessions written by {agent}: {count}",
            contextValue="corpusGroup.agent",
        )
    if value is None:
        return TreeNode(
            id=ctx.id("group", value),
            label="(no workspace)",
            collapsible="collapsed",
            description=count,
            icon="question",
            tooltip=f"Sessions whose header has no cwd: {count}",
            contextValue="corpusGroup.workspace",
        )
    head, _, base = value.rstrip("/").rpartition("/")
    return TreeNode(
        id=ctx.id("group", value),
        label=base or value,
        collapsible="collapsed",
        description=f"{count} · {head}" if head else count,
        icon="folder",
        tooltip=f"{value}\n{count}",
        contextValue="corpusGroup.workspace",
    )


def groups_page(ctx: Ctx, offset: int) -> list[TreeNode]:
    """The roots of a grouped tree (offset 0) or a later page of them ("more")."""
    groups = grouped(ctx.corpus(), ctx.scope)
    values = list(groups)
    start, end, more = page_bounds(len(values), offset)
    nodes = [group_node(ctx, v, len(groups[v])) for v in values[start:end]]
    if more:
        nodes.append(more_node(ctx.key("more", end), len(values) - end, "groups"))
    return nodes


def _members_page(ctx: Ctx, value: GroupValue, offset: int) -> list[TreeNode]:
    members = grouped(ctx.corpus(), ctx.scope).get(value, [])
    start, end, more = page_bounds(len(members), offset)
    shown = members[start:end]
    infos, lags = ctx.infos(shown), ctx.lags(shown)
    nodes = [
        session_node(ctx.key("s", r.header.id), r, infos.get(r.header.id), lags.get(r.header.id))
        for r in shown
    ]
    if more:
        nodes.append(more_node(ctx.key("gmore", value, end), len(members) - end, "sessions"))
    return nodes


def group_children(ctx: Ctx, value: GroupValue) -> list[TreeNode]:
    return _members_page(ctx, value, 0)


def gmore_children(ctx: Ctx, value: GroupValue, offset: int) -> list[TreeNode]:
    return _members_page(ctx, value, offset)


def group_parent(ctx: Ctx, value: GroupValue) -> Key | None:
    """The page of groups holding ``value``; a group no session has any more is a root."""
    records = ctx.corpus_or_none()
    if records is None:
        return None
    values = list(grouped(records, ctx.scope))
    if value not in values:
        return None
    offset = page_offset(values.index(value))
    return None if offset == 0 else ctx.key("more", offset)


def gmore_parent(ctx: Ctx, value: GroupValue, offset: int) -> Key:
    return ctx.key("group", value) if offset == PAGE else ctx.key("gmore", value, offset - PAGE)


def session_parent(ctx: Ctx, session_id: str) -> Key | None:
    """The group (or group page) of a session; one listing. Gone from the corpus: a root."""
    records = ctx.corpus_or_none()
    record = next((r for r in records or () if r.header.id == session_id), None)
    if records is None or record is None:
        return None
    value = value_of(ctx.scope, record)
    members = grouped(records, ctx.scope)[value]
    offset = page_offset(next(i for i, r in enumerate(members) if r.header.id == session_id))
    return ctx.key("group", value) if offset == 0 else ctx.key("gmore", value, offset)
