"""The events view: every raw event of one session (args.sessionId) with its surface status,
paged. Its event list is also the sessions view's "Events" group."""

from __future__ import annotations

from .context import Ctx
from .ids import INDEX, PAGE, SESSION, Args, Key, page_bounds, page_offset, page_start
from .kinds import Kind, View
from .nodes import TreeNode, event_node, more_node


def event_page(ctx: Ctx, session_id: str, offset: int) -> list[TreeNode]:
    """One page of a session's events: one load and one fold."""
    loaded = ctx.load(session_id)
    fold = loaded.fold()  # INVALID_SURFACE, as listEvents reports it
    total = len(loaded.events)
    start, end, more = page_bounds(total, offset)
    nodes = [
        event_node(
            ctx.key("e", session_id, seq), session_id, seq, loaded.events[seq], fold.surface(seq)
        )
        for seq in range(start, end)
    ]
    if more:
        nodes.append(more_node(ctx.key("emore", session_id, end), total - end, "events"))
    return nodes


def page_holder(ctx: Ctx, session_id: str, offset: int, container: Key | None) -> Key | None:
    """The key whose children are the page at ``offset``; ``container`` holds the first page
    (None for roots)."""
    return container if offset == 0 else ctx.key("emore", session_id, offset)


def _roots(ctx: Ctx, args: Args) -> list[TreeNode]:
    return event_page(ctx, str(args["sessionId"]), 0)


def _emore_parent(ctx: Ctx, session_id: str, offset: int) -> Key | None:
    return page_holder(ctx, session_id, offset - PAGE, None)


def _e_parent(ctx: Ctx, session_id: str, seq: int) -> Key | None:
    return page_holder(ctx, session_id, page_offset(seq), None)


VIEW = View(
    name="events",
    args=("sessionId",),
    roots=_roots,
    kinds={
        "emore": Kind((SESSION, page_start(PAGE)), _emore_parent, event_page),  # next page
        "e": Kind((SESSION, INDEX), _e_parent),  # one event
    },
)
