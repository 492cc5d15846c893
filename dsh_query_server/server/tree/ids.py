"""Node ids and the named node kinds of each view (protocol.md §6).

An id is ``base64url(JSON array)`` without padding; the array is ``[view, kind, *params]``.
Everything needed to expand the node or to find its parent is in the id, so the server
remembers nothing between requests and an id survives a server restart. Ids hold only immutable
facts (session ids, seqs, page offsets), never positions that shift as the corpus grows. Each
view declares its kinds here as ``Kind``s (parameter types, and the functions that compute the
kind's children and parent); anything that does not decode to a known kind of the requested view
is ``-32602`` ``SESSION_QUERY_INVALID_REQUEST``. The kind ``err`` is shared by every view.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ... import errors, jsoncodec
from ...errors import QueryError
from ...values import is_nonneg_safe_integer

if TYPE_CHECKING:
    from .context import Ctx
    from .nodes import TreeNode

# (view, kind, *params); params are JSON strings, ints, or (in "err") nested lists and null.
Key = tuple[object, ...]
Args = dict[str, object]

MAX_CHILDREN = 200
PAGE = MAX_CHILDREN - 1  # entries per page when a "more" node is needed
# A session's Lineage group (sessions view) may start with its parent link, so its child links
# page one shorter to keep that level within MAX_CHILDREN too.
LINK_PAGE = PAGE - 1
# Ancestors shown per level in the lineage view: the roots also hold the target and possibly the
# "parent not in corpus" node, so 198 keeps that level within MAX_CHILDREN.
ANCESTOR_BLOCK = MAX_CHILDREN - 2

ERR = "err"


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a kind: what values an id may hold there."""

    name: str
    accepts: Callable[[object], bool]


def _index(value: object, multiple_of: int = 0) -> bool:
    """A JSON integer in the safe range, >= 0; with ``multiple_of``, > 0 and a multiple of it."""
    if type(value) is not int or not is_nonneg_safe_integer(value):
        return False
    return multiple_of == 0 or (value > 0 and value % multiple_of == 0)


SESSION = Param("session id", lambda v: isinstance(v, str))
INDEX = Param("offset or seq", _index)
POSITIVE = Param("count", lambda v: _index(v, 1))


def page_start(size: int) -> Param:
    """The offset of a page after the first: a positive multiple of the page size."""
    return Param(f"page offset ({size})", lambda v: _index(v, size))


def one_of(names: Collection[str]) -> Param:
    return Param("one of " + ", ".join(names), lambda v: isinstance(v, str) and v in names)


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
    # An optional root arg choosing the scope (ids.Kind.scope) of the whole tree, and the
    # values it takes; NO_SCOPE (or leaving it out) is the unscoped tree.
    scope_arg: str | None = None
    scopes: tuple[str, ...] = ()

    def root_args(self, args: Args) -> list[object]:
        return [args[name] for name in self.args]


NO_SCOPE = "none"


def invalid(message: str) -> QueryError:
    return QueryError(errors.INVALID_REQUEST, message)


def encode_id(key: Key) -> str:
    return base64.urlsafe_b64encode(jsoncodec.dumps(list(key))).rstrip(b"=").decode("ascii")


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


def page_bounds(total: int, offset: int, size: int = PAGE) -> tuple[int, int, bool]:
    """(start, end, more): the slice shown at ``offset`` and whether a "more" node follows.
    Pages have a fixed size, so the page of an entry follows from its index alone."""
    if total - offset <= size:
        return offset, total, False
    return offset, offset + size, True


def page_offset(index: int, size: int = PAGE) -> int:
    return (index // size) * size
