"""The eventTrace view: the relationships of one event (args {sessionId, seq}). Roots: the
target, then always the five groups in a fixed order (a stable layout; an empty group reads
"(none)" and cannot be expanded, which answers "is there any?" without a click). Each group child
is a link to its event (resource + the open-event command). One load + one fold per request."""

from __future__ import annotations

from dataclasses import replace

from msgspec import UNSET

from ...model.wire import SessionEventTraceObservation
from ...query import trace
from ...query.loaded import Loaded, check_cancelled, target_index
from .context import Ctx
from .ids import INDEX, PAGE, SESSION, Args, Key, one_of, page_bounds, page_offset, page_start
from .kinds import Kind, View
from .nodes import TreeNode, TreeResource, event_node, more_node

# Group key in the id -> (label, icon), in the order the roots show them.
TRACE_GROUPS: dict[str, tuple[str, str]] = {
    "replacedBy": ("Replaced by", "arrow-swap"),
    "chain": ("Replacement chain", "list-ordered"),
    "replaced": ("Replaced events", "replace-all"),
    "sources": ("Sources", "arrow-left"),
    "derived": ("Derived events", "arrow-right"),
}
GROUP = one_of(TRACE_GROUPS)


def _trace(
    ctx: Ctx, session_id: str, seq: object
) -> tuple[Loaded, int, SessionEventTraceObservation]:
    loaded = ctx.load(session_id)
    check_cancelled(ctx.token)
    index = target_index(loaded, seq)  # EVENT_NOT_FOUND before the fold, as in traceEvent
    loaded = replace(loaded, known_fold=loaded.fold())  # fold a persisted log once, not twice
    return loaded, index, trace.trace_event(loaded, index)


def _groups(result: SessionEventTraceObservation) -> dict[str, list[int]]:
    return {
        "replacedBy": [] if result.replacedBy is UNSET else [result.replacedBy],
        "chain": list(result.replacementChain),
        "replaced": list(result.replacedEventSeqs),
        "sources": [int(s) for s in result.sourceEventSeqs],
        "derived": list(result.derivedEventSeqs),
    }


def _roots(ctx: Ctx, args: Args) -> list[TreeNode]:
    session_id = str(args["sessionId"])
    loaded, seq, result = _trace(ctx, session_id, args["seq"])
    fold = loaded.fold()
    nodes = [
        event_node(
            ctx.key("t", session_id, seq),
            session_id,
            seq,
            loaded.events[seq],
            fold.surface(seq),
            role="target",
        )
    ]
    for name, seqs in _groups(result).items():
        label, icon = TRACE_GROUPS[name]
        nodes.append(
            TreeNode(
                id=ctx.id("g", session_id, seq, name),
                label=label,
                collapsible="expanded" if seqs else "none",
                description=str(len(seqs)) if seqs else "(none)",
                icon=icon,
                contextValue=f"group.{name}",
                resource=TreeResource(sessionId=session_id, seq=seq),
            )
        )
    return nodes


def _links(ctx: Ctx, session_id: str, seq: int, name: str, offset: int) -> list[TreeNode]:
    loaded, seq, result = _trace(ctx, session_id, seq)
    fold = loaded.fold()
    seqs = _groups(result)[name]
    start, end, more = page_bounds(len(seqs), offset)
    nodes = [
        event_node(
            ctx.key("l", session_id, seq, name, i, seqs[i]),
            session_id,
            seqs[i],
            loaded.events[seqs[i]],
            fold.surface(seqs[i]),
        )
        for i in range(start, end)
    ]
    if more:
        nodes.append(
            more_node(ctx.key("gmore", session_id, seq, name, end), len(seqs) - end, "events")
        )
    return nodes


def _g_children(ctx: Ctx, session_id: str, seq: int, name: str) -> list[TreeNode]:
    return _links(ctx, session_id, seq, name, 0)


def _root_parent(ctx: Ctx, *params: object) -> None:
    return None


def _gmore_parent(ctx: Ctx, session_id: str, seq: int, name: str, offset: int) -> Key:
    if offset == PAGE:
        return ctx.key("g", session_id, seq, name)
    return ctx.key("gmore", session_id, seq, name, offset - PAGE)


def _l_parent(ctx: Ctx, session_id: str, seq: int, name: str, index: int, linked: int) -> Key:
    offset = page_offset(index)
    if offset == 0:
        return ctx.key("g", session_id, seq, name)
    return ctx.key("gmore", session_id, seq, name, offset)


VIEW = View(
    name="eventTrace",
    args=("sessionId", "seq"),
    roots=_roots,
    kinds={
        "t": Kind((SESSION, INDEX), _root_parent),  # (session, seq): the target event
        "g": Kind((SESSION, INDEX, GROUP), _root_parent, _g_children),  # a relationship group
        # next page of a group, from offset
        "gmore": Kind((SESSION, INDEX, GROUP, page_start(PAGE)), _gmore_parent, _links),
        # (session, seq, group, index in group, linked seq)
        "l": Kind((SESSION, INDEX, GROUP, INDEX, INDEX), _l_parent),
    },
)
