"""Which sessions the sessions view nests under another (protocol.md §6 [ours]): a sub-agent
(header ``origin: "subagent"``, importers.md §1.2 and §2.2) sits under its parent when that
parent is in the corpus. Claude Code's and Codex's compaction helpers are sub-agents too (their
``source.lineage`` is ``"compaction"``), so they sit under the session whose context they
summarised. Forks and resumes stay at the top: they are conversations of their own.

A parent chain that loops (an invalid lineage, semantics.md §3.9) nests none of the sessions on
the loop, so every session is reachable from a root. Everything here comes from one listing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...query.lineage import children_index
from ...query.loaded import Record
from .agents import kin_of, source_of
from .context import Ctx
from .nodes import TreeNode, session_node


@dataclass(frozen=True, slots=True)
class Forest:
    """The corpus as the sessions view shows it."""

    roots: list[Record]  # top-level sessions, in corpus order (newest first)
    children: dict[str, list[Record]]  # nested sessions by parent id, oldest first
    parent: dict[str, str]  # nested session id -> the id it is nested under

    def position(self, session_id: str) -> tuple[str | None, int] | None:
        """(the parent id or None for a root, the index among its siblings); None when the
        session is not in the corpus."""
        parent = self.parent.get(session_id)
        siblings = self.roots if parent is None else self.children.get(parent, [])
        index = next((i for i, r in enumerate(siblings) if r.header.id == session_id), None)
        return None if index is None else (parent, index)

    def descendants(self, session_id: str) -> int:
        """How many sessions are nested below ``session_id``, at any depth."""
        count, stack = 0, [session_id]
        while stack:
            kids = self.children.get(stack.pop(), [])
            count += len(kids)
            stack.extend(r.header.id for r in kids)
        return count


def _nesting_parent(record: Record, ids: set[str]) -> str | None:
    header = record.header
    parent = header.parent_session
    if header.origin != "subagent" or not isinstance(parent, str):
        return None
    return parent if parent in ids and parent != header.id else None


def forest(records: Sequence[Record]) -> Forest:
    ids = {r.header.id for r in records if isinstance(r.header.id, str)}
    edge = {r.header.id: p for r in records if (p := _nesting_parent(r, ids)) is not None}
    on_loop: set[str] = set()
    settled: set[str] = set()
    # Each session has at most one edge up, so a walk either ends or enters a loop; each
    # session is walked once.
    for start in edge:
        path: list[str] = []
        index: dict[str, int] = {}
        node: str | None = start
        while node is not None and node not in settled and node not in index:
            index[node] = len(path)
            path.append(node)
            node = edge.get(node)
        if node is not None and node in index:
            on_loop.update(path[index[node] :])
        settled.update(path)
    parent = {sid: p for sid, p in edge.items() if sid not in on_loop}
    nested = [r for r in records if r.header.id in parent]
    return Forest(
        roots=[r for r in records if r.header.id not in parent],
        children=dict(children_index(nested)),
        parent=parent,
    )


def session_nodes(ctx: Ctx, shown: Sequence[Record], tree: Forest) -> list[TreeNode]:
    """Session nodes as the sessions view shows them: expandable, nested ones saying what they
    are to their parent."""
    infos, lags = ctx.infos(shown), ctx.lags(shown)
    return [
        session_node(
            ctx.key("s", r.header.id),
            r,
            infos.get(r.header.id),
            lags.get(r.header.id),
            role=kin_of(r.header, source_of(r.header)) if r.header.id in tree.parent else None,
        )
        for r in shown
    ]
