"""The registry of tree views and the two reads of it behind ``sessionQuery/treeChildren`` and
``sessionQuery/treeParent`` (protocol.md §6; their handlers are server/handlers/tree.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from msgspec import UNSET

from ... import errors
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...errors import QueryError
from ...values import is_number
from . import event_trace, events, lineage, sessions
from .context import Ctx
from .ids import ERR, Args, Key, encode_id, invalid
from .kinds import NO_SCOPE, View, decode_id, split_key
from .nodes import TreeNode, error_node

log = logging.getLogger(__name__)

VIEWS: Mapping[str, View] = {
    view.name: view for view in (sessions.VIEW, lineage.VIEW, events.VIEW, event_trace.VIEW)
}


def require_args(args: object, fields: Sequence[str]) -> Args:
    if not isinstance(args, dict):
        raise invalid("args must be an object")
    checked: Args = args  # a JSON object: string keys
    for name in fields:
        if name == "seq":
            if not is_number(checked.get("seq")):
                raise invalid("args.seq must be a number")
        elif not isinstance(checked.get(name), str):
            raise invalid(f"args.{name} must be a string")
    return checked


def root_scope(view: View, args: object) -> str | None:
    """The scope a roots request asks for (``args.groupBy`` in the sessions view)."""
    if view.scope_arg is None or not isinstance(args, dict):
        return None
    asked: Args = args
    value = asked.get(view.scope_arg, NO_SCOPE)
    if value == NO_SCOPE:
        return None
    if not isinstance(value, str) or value not in view.scopes:
        choices = ", ".join((NO_SCOPE, *view.scopes))
        raise invalid(f"args.{view.scope_arg} must be one of {choices}")
    return value


def _guarded(
    ctx: Ctx, parent: Key | None, root_args: list[object], compute: Callable[[], list[TreeNode]]
) -> list[TreeNode]:
    """Failures inside a view become one error node; cancellation stays a cancelled request."""
    try:
        return compute()
    except QueryError as exc:
        if exc.code == errors.ABORTED:
            raise
        return [error_node(ctx.view, exc, parent, root_args)]
    except Exception:  # a server bug: logged with its traceback, shown as a node
        log.exception("tree view %s failed", ctx.view)
        internal = QueryError(errors.INTERNAL, "internal server error (see the server log)")
        return [error_node(ctx.view, internal, parent, root_args)]


def tree_children(
    rt: Runtime, view_name: str, node_id: str | None, args: object, token: CancelToken
) -> list[TreeNode]:
    """A view's roots (``node_id`` None), or a node's children. ``args`` is the request's (UNSET
    when absent), checked here against what the view's roots need."""
    view = VIEWS[view_name]
    ctx = Ctx(rt, token, view.name)
    if node_id is None:
        # Args are read only for roots: a node id carries its own (it is self-describing).
        asked = require_args(({} if args is UNSET else args) if view.args else {}, view.args)
        ctx.scope = root_scope(view, args)
        root_args = view.root_args(asked) + ([] if ctx.scope is None else [ctx.scope])
        return _guarded(ctx, None, root_args, lambda: view.roots(ctx, asked))
    key = decode_id(view, node_id)
    if key[1] == ERR:
        return []
    kind, own, ctx.scope = split_key(view, key)
    children = kind.children
    if children is None:  # a leaf
        return []
    return _guarded(ctx, key, [], lambda: children(ctx, *own))


def tree_parent(rt: Runtime, view_name: str, node_id: str, token: CancelToken) -> str | None:
    """A node's parent id, None for a root."""
    view = VIEWS[view_name]
    key = decode_id(view, node_id)
    if key[1] == ERR:
        parent = key[2]
        found = None if not isinstance(parent, list) else tuple(parent)
    else:
        kind, own, scope = split_key(view, key)
        found = kind.parent(Ctx(rt, token, view.name, scope), *own)
    return None if found is None else encode_id(found)
