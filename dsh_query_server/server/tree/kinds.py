"""The named node kinds of each view, and decoding an id against them (protocol.md §6).

Each view declares its kinds as ``Kind``s (parameter types, and the functions that compute the
kind's children and parent); anything that does not decode to a known kind of the requested view
is ``-32602`` ``SESSION_QUERY_INVALID_REQUEST``. The kind ``err`` is shared by every view.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ... import jsoncodec
from .context import Ctx
from .ids import ERR, Args, Key, Param, invalid
from .nodes import TreeNode

Children = Callable[..., "list[TreeNode]"]  # (ctx, *params)
Parent = Callable[..., "Key | None"]  # (ctx, *params)


@dataclass(frozen=True, slots=True)
class Kind:
    """A named node kind: its parameters, its children (None: a leaf) and its parent.

    ``scope`` is an optional last parameter (the sessions view's grouping): a key that carries
    it passes it to every key its children and parent are built with (``Ctx.scope``), so one
    set of kinds serves every grouping and each grouped subtree keeps its own ids. With
    ``scoped`` the scope is required (kinds that exist only inside a grouping)."""

    params: tuple[Param, ...]
    parent: Parent
    children: Children | None = None
    scope: Param | None = None
    scoped: bool = False

    def accepts(self, params: Sequence[object]) -> bool:
        return self.split(params) is not None

    def split(self, params: Sequence[object]) -> tuple[Sequence[object], object] | None:
        """(own params, scope or None) when ``params`` fit this kind, else None."""
        own, scope = params, None
        if self.scope is not None and len(params) == len(self.params) + 1:
            own, scope = params[:-1], params[-1]
            if not self.scope.accepts(scope):
                return None
        elif self.scoped:
            return None
        if len(own) != len(self.params):
            return None
        if not all(p.accepts(v) for p, v in zip(self.params, own, strict=True)):
            return None
        return own, scope


@dataclass(frozen=True, slots=True)
class View:
    """A tree view: the args its roots need (they are also the error nodes' root args), its
    roots, and its node kinds by name."""

    name: str
    args: tuple[str, ...]
    roots: Callable[[Ctx, Args], list[TreeNode]]
    kinds: Mapping[str, Kind]
    # An optional root arg choosing the scope (kinds.Kind.scope) of the whole tree, and the
    # values it takes; NO_SCOPE (or leaving it out) is the unscoped tree.
    scope_arg: str | None = None
    scopes: tuple[str, ...] = ()

    def root_args(self, args: Args) -> list[object]:
        return [args[name] for name in self.args]


NO_SCOPE = "none"


def decode_id(view: View, node_id: object) -> Key:
    if not isinstance(node_id, str):
        raise invalid("nodeId must be a string")
    problem = invalid(f'nodeId is not a node of the "{view.name}" view')
    try:
        text = base64.b64decode(node_id + "=" * (-len(node_id) % 4), altchars=b"-_", validate=True)
        value = jsoncodec.loads(text)
    except (binascii.Error, ValueError):
        raise problem from None
    if not valid_key(value, view):
        raise problem
    return tuple(value)


def valid_key(value: object, view: View) -> bool:
    if not isinstance(value, list) or len(value) < 2 or value[0] != view.name:
        return False
    kind, params = value[1], value[2:]
    if kind == ERR:
        # [parent key or null, root args]: enough to place the error node (it has no children).
        if len(params) != 2 or not isinstance(params[1], list):
            return False
        return params[0] is None or valid_key(params[0], view)
    spec = view.kinds.get(kind) if isinstance(kind, str) else None
    return spec is not None and spec.accepts(params)


def split_key(view: View, key: Key) -> tuple[Kind, Sequence[object], object]:
    """A decoded (non-error) key's kind, own params and scope (None when unscoped)."""
    kind = view.kinds[str(key[1])]
    split = kind.split(key[2:])
    assert split is not None  # decode_id accepted it
    return kind, split[0], split[1]
