"""The sessions view grouped by agent or by workspace (``args.groupBy`` on the roots request).

The grouping is the scope (kinds.Kind.scope) of every id in a grouped tree: a session shown under
a group is ``["sessions", "s", id, "agent"]``, its Events group ``["sessions", "events", id,
"agent"]``, and so on, so each grouped tree has its own ids and every parent stays computable.
Groups hold only immutable facts in their ids (the agent, the cwd); positions come from one
listing. Groups are ordered by their newest session (the corpus order), sessions within a group
newest first, and both levels page like the ungrouped corpus. Only top-level sessions are
grouped: a nested sub-agent (``nesting``) stays under its parent, in its parent's group."""

from __future__ import annotations

from collections.abc import Sequence

from ...query.loaded import Record
from .agents import AGENT_ICONS, agent_of, workspace_of
from .context import Ctx
from .ids import PAGE, Key, Param, one_of, page_bounds, page_offset
from .nesting import Forest, forest, session_nodes
from .nodes import TreeNode, more_node

AGENT = "agent"
WORKSPACE = "workspace"
MODES = (AGENT, WORKSPACE)
GROUPING = one_of(MODES)
GROUP_VALUE = Param("group", lambda v: v is None or isinstance(v, str))

GroupValue = str | None


def value_of(mode: object, record: Record) -> GroupValue:
    return agent_of(record.header) if mode == AGENT else workspace_of(record.header)


def grouped(records: Sequence[Record], mode: object) -> dict[GroupValue, list[Record]]:
    """The partition of the top-level sessions by ``mode``, groups in order of their newest
    session."""
    groups: dict[GroupValue, list[Record]] = {}
    for record in records:
        groups.setdefault(value_of(mode, record), []).append(record)
    return groups


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def group_node(ctx: Ctx, value: GroupValue, members: list[Record], tree: Forest) -> TreeNode:
    nested = sum(tree.descendants(r.header.id) for r in members)
    count = _plural(len(members), "session") + (
        f" · {_plural(nested, 'sub-agent')}" if nested else ""
    )
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
    tree = forest(ctx.corpus(labels=False))  # group nodes read no label
    groups = grouped(tree.roots, ctx.scope)
    values = list(groups)
    start, end, more = page_bounds(len(values), offset)
    nodes = [group_node(ctx, v, groups[v], tree) for v in values[start:end]]
    if more:
        nodes.append(more_node(ctx.key("more", end), len(values) - end, "groups"))
    return nodes


def _members_page(ctx: Ctx, value: GroupValue, offset: int) -> list[TreeNode]:
    tree = forest(ctx.corpus())
    members = grouped(tree.roots, ctx.scope).get(value, [])
    start, end, more = page_bounds(len(members), offset)
    nodes = session_nodes(ctx, members[start:end], tree)
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
    values = list(grouped(forest(records).roots, ctx.scope))
    if value not in values:
        return None
    offset = page_offset(values.index(value))
    return None if offset == 0 else ctx.key("more", offset)


def gmore_parent(ctx: Ctx, value: GroupValue, offset: int) -> Key:
    return ctx.key("group", value) if offset == PAGE else ctx.key("gmore", value, offset - PAGE)


def session_parent(ctx: Ctx, session_id: str, tree: Forest) -> Key | None:
    """The group (or group page) of a top-level session of ``tree``."""
    record = next((r for r in tree.roots if r.header.id == session_id), None)
    if record is None:
        return None
    value = value_of(ctx.scope, record)
    members = grouped(tree.roots, ctx.scope)[value]
    offset = page_offset(next(i for i, r in enumerate(members) if r.header.id == session_id))
    return ctx.key("group", value) if offset == 0 else ctx.key("gmore", value, offset)
