"""The lineage view of args.sessionId. Roots, top to bottom: the "parent … not in corpus" node
when the chain is incomplete, the ancestors from the root down to the immediate parent as a flat
list (reads like a breadcrumb and keeps the target one level deep however long the chain is),
then the target, expanded, whose descendant tree opens lazily (one listing per level). Above
ANCESTOR_BLOCK ancestors, the oldest ones fold into an "earlier ancestors" node at the top (it
pages the same way)."""

from __future__ import annotations

from dataclasses import dataclass

from ... import errors
from ...errors import QueryError
from ...query import lineage
from ...query.loaded import Record, check_cancelled
from .agents import kin_of, source_of
from .context import Ctx
from .ids import (
    ANCESTOR_BLOCK,
    PAGE,
    POSITIVE,
    SESSION,
    Args,
    Key,
    page_bounds,
    page_offset,
    page_start,
)
from .kinds import Kind, View
from .labels import Lag, SessionInfo
from .nodes import TreeNode, more_node, session_node, unresolved_node


@dataclass(frozen=True, slots=True)
class _Chain:
    records: list[Record]
    by_id: dict[str, Record]
    ancestors: list[Record]  # root first
    unresolved: object | None  # the missing parent's id when the chain is incomplete


def _chain(ctx: Ctx, target: str) -> _Chain:
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
    return _Chain(records, by_id, ancestors[::-1], unresolved)


def _chain_or_none(ctx: Ctx, target: str) -> _Chain | None:
    try:
        return _chain(ctx, target)
    except QueryError as exc:
        if exc.code == errors.ABORTED:
            raise
        return None


def _block(ancestors: list[Record], end: int) -> list[Record | int]:
    """Ancestors [0, end) root-first, as shown at one level: all of them, or an "earlier"
    marker (the int where the shown run starts) then the newest ANCESTOR_BLOCK - 1."""
    if end <= ANCESTOR_BLOCK:
        return list(ancestors[:end])
    low = end - (ANCESTOR_BLOCK - 1)
    return [low, *ancestors[low:end]]


def _shown(block: list[Record | int]) -> list[Record]:
    return [r for r in block if isinstance(r, Record)]


def _ancestor_nodes(
    ctx: Ctx,
    target: str,
    block: list[Record | int],
    chain: _Chain,
    infos: dict[str, SessionInfo],
    lags: dict[str, Lag],
) -> list[TreeNode]:
    nodes: list[TreeNode] = []
    ancestors = chain.ancestors
    # The top ancestor is "root" only when the chain is complete; otherwise its parent is unknown.
    root_id = ancestors[0].header.id if ancestors and chain.unresolved is None else None
    for item in block:
        if isinstance(item, int):
            nodes.append(
                TreeNode(
                    id=ctx.id("amore", target, item),
                    label="Earlier ancestors…",
                    collapsible="collapsed",
                    description=f"{item} more ancestors",
                    icon="ellipsis",
                    contextValue="more",
                )
            )
            continue
        sid = item.header.id
        role = (
            "parent" if sid == ancestors[-1].header.id else "root" if sid == root_id else "ancestor"
        )
        nodes.append(
            session_node(
                ctx.key("a", target, sid),
                item,
                infos.get(sid),
                lags.get(sid),
                collapsible="none",
                role=role,
            )
        )
    return nodes


def _roots(ctx: Ctx, args: Args) -> list[TreeNode]:
    target = str(args["sessionId"])
    chain = _chain(ctx, target)
    children = lineage.children_index(chain.records)
    nodes: list[TreeNode] = []
    if chain.unresolved is not None:
        nodes.append(unresolved_node(ctx.key("u", target, chain.unresolved), chain.unresolved))
    block = _block(chain.ancestors, len(chain.ancestors))
    record = chain.by_id[target]
    labelled = [*_shown(block), record]
    infos, lags = ctx.infos(labelled), ctx.lags(labelled)
    nodes += _ancestor_nodes(ctx, target, block, chain, infos, lags)
    nodes.append(
        session_node(
            ctx.key("t", target),
            record,
            infos.get(target),
            lags.get(target),
            collapsible="expanded" if children.get(target) else "none",
            role="target",
        )
    )
    return nodes


# -- ancestors -------------------------------------------------------------------------------


def _amore_children(ctx: Ctx, target: str, end: int) -> list[TreeNode]:
    chain = _chain(ctx, target)
    block = _block(chain.ancestors, min(end, len(chain.ancestors)))
    shown = _shown(block)
    return _ancestor_nodes(ctx, target, block, chain, ctx.infos(shown), ctx.lags(shown))


def _ancestor_container(
    ctx: Ctx, target: str, chain: _Chain, index: int | None, marker: int | None
) -> Key | None:
    """The key whose children hold ancestor ``index`` (or the "earlier" node ``marker``)."""
    end, container = len(chain.ancestors), None
    while end > ANCESTOR_BLOCK:
        low = end - (ANCESTOR_BLOCK - 1)
        if marker == low or (index is not None and index >= low):
            return container
        container, end = ctx.key("amore", target, low), low
    return container


def _a_parent(ctx: Ctx, target: str, ancestor: str) -> Key | None:
    chain = _chain_or_none(ctx, target)
    if chain is None:
        return None
    index = next((i for i, r in enumerate(chain.ancestors) if r.header.id == ancestor), None)
    return None if index is None else _ancestor_container(ctx, target, chain, index, None)


def _amore_parent(ctx: Ctx, target: str, end: int) -> Key | None:
    chain = _chain_or_none(ctx, target)
    return None if chain is None else _ancestor_container(ctx, target, chain, None, end)


def _root_parent(ctx: Ctx, *params: object) -> None:
    return None


# -- descendants, lazily: one listing per level ----------------------------------------------


def _descendants(ctx: Ctx, target: str, parent_id: str, offset: int) -> list[TreeNode]:
    records = ctx.corpus()
    groups = lineage.children_index(records)
    children = groups.get(parent_id, [])
    start, end, more = page_bounds(len(children), offset)
    shown = children[start:end]
    infos, lags = ctx.infos(shown), ctx.lags(shown)
    nodes = [
        session_node(
            ctx.key("d", target, r.header.id),
            r,
            infos.get(r.header.id),
            lags.get(r.header.id),
            collapsible="collapsed" if groups.get(r.header.id) else "none",
            role=kin_of(r.header, source_of(r.header)),
        )
        for r in shown
    ]
    if more:
        nodes.append(
            more_node(ctx.key("dmore", target, parent_id, end), len(children) - end, "children")
        )
    return nodes


def _t_children(ctx: Ctx, target: str) -> list[TreeNode]:
    return _descendants(ctx, target, target, 0)


def _d_children(ctx: Ctx, target: str, session_id: str) -> list[TreeNode]:
    return _descendants(ctx, target, session_id, 0)


def _holder(ctx: Ctx, target: str, parent_id: str) -> Key:
    return ctx.key("t", target) if parent_id == target else ctx.key("d", target, parent_id)


def _dmore_parent(ctx: Ctx, target: str, parent_id: str, offset: int) -> Key:
    if offset == PAGE:
        return _holder(ctx, target, parent_id)
    return ctx.key("dmore", target, parent_id, offset - PAGE)


def _d_parent(ctx: Ctx, target: str, session_id: str) -> Key | None:
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
    if offset == 0:
        return _holder(ctx, target, parent_id)
    return ctx.key("dmore", target, parent_id, offset)


VIEW = View(
    name="lineage",
    args=("sessionId",),
    roots=_roots,
    kinds={
        "t": Kind((SESSION,), _root_parent, _t_children),  # the target
        "u": Kind((SESSION, SESSION), _root_parent),  # (target, unresolved parent id)
        "a": Kind((SESSION, SESSION), _a_parent),  # (target, ancestor id)
        # (target, end): the ancestors above the shown block
        "amore": Kind((SESSION, POSITIVE), _amore_parent, _amore_children),
        "d": Kind((SESSION, SESSION), _d_parent, _d_children),  # (target, descendant id)
        # (target, parent id, offset): next page of that parent's children
        "dmore": Kind((SESSION, SESSION, page_start(PAGE)), _dmore_parent, _descendants),
    },
)
