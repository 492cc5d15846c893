"""The editor-neutral tree views (protocol.md §6): a view's roots or a node's children, and a
node's parent. Failures inside a view are error nodes (server/tree/)."""

from __future__ import annotations

import enum
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...model.params import Expect, Params, Spec
from ..registry import method
from ..tree import VIEWS, tree_children, tree_parent
from ..tree.nodes import TreeNode


class ServerView(enum.Enum):  # the names of server/tree's VIEWS
    SESSIONS = "sessions"
    LINEAGE = "lineage"
    EVENTS = "events"
    EVENT_TRACE = "eventTrace"


View = Annotated[ServerView, Expect("one of " + ", ".join(VIEWS))]


class TreeGrouping(enum.Enum):
    NONE = "none"
    AGENT = "agent"
    WORKSPACE = "workspace"


class TreeArgs(Params):
    sessionId: str | UnsetType = UNSET
    seq: int | UnsetType = UNSET
    groupBy: TreeGrouping | UnsetType = UNSET  # sessions view roots only (server/tree/groups.py)


class TreeChildrenParams(Params):
    """Without ``nodeId`` (or with null): the view's roots, for which ``args`` holds what the
    view needs (protocol.md §6)."""

    view: View
    nodeId: Annotated[str | None, Expect("a string")] = None
    # Read for roots only, and only the keys that view needs: the view checks it
    # (server/tree/registry.py).
    args: Annotated[Any, Spec(TreeArgs)] = UNSET


class TreeParentParams(Params):
    view: View
    nodeId: Annotated[str, Expect("a string")]


class TreeChildrenResult(msgspec.Struct):
    nodes: list[TreeNode]


class TreeParentResult(msgspec.Struct, omit_defaults=True):
    nodeId: str | UnsetType = UNSET


@method(
    "sessionQuery/treeChildren",
    params=TreeChildrenParams,
    result=TreeChildrenResult,
    errors=(E.INVALID_REQUEST, E.ABORTED),
)
def children(rt: Runtime, p: TreeChildrenParams, token: CancelToken) -> TreeChildrenResult:
    """A view's roots, or a node's children; failures inside a view are error nodes
    (protocol.md §6)."""
    return TreeChildrenResult(tree_children(rt, p.view.value, p.nodeId, p.args, token))


@method(
    "sessionQuery/treeParent",
    params=TreeParentParams,
    result=TreeParentResult,
    errors=(E.INVALID_REQUEST,),
)
def parent(rt: Runtime, p: TreeParentParams, token: CancelToken) -> TreeParentResult:
    """A node's parent id, absent for a root (protocol.md §6)."""
    found = tree_parent(rt, p.view.value, p.nodeId, token)
    return TreeParentResult(UNSET if found is None else found)
