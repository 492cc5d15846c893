"""Session lineage (semantics.md §5.1): ancestors outwards, then the descendant forest.

Chains can be thousands deep, so both walks are iterative, and the descendant forest is encoded
to JSON iteratively too (a recursive encoder would hit Python's recursion limit).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from .. import errors, jsoncodec
from ..errors import QueryError
from ..model import wire
from .loaded import Record


def trace(records: Sequence[Record], session_id: str) -> wire.SessionLineageTrace:
    by_id = {r.header.id: r for r in records}
    target = by_id.get(session_id)
    if target is None:
        raise QueryError(
            errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id
        )
    ancestors: list[Record] = []
    seen = {session_id}
    unresolved: Any = UNSET
    parent = target.header.parent_session
    while parent is not UNSET:
        if parent in seen:
            raise QueryError(
                errors.INVALID_LINEAGE,
                f'session lineage contains a cycle at "{parent}"',
                session_id=session_id,
            )
        record = by_id.get(parent)
        if record is None:
            unresolved = parent
            break
        seen.add(parent)
        ancestors.append(record)
        parent = record.header.parent_session
    result = wire.SessionLineageTrace(
        target=target.to_wire(),
        ancestors=[r.to_wire() for r in ancestors],
        descendants=msgspec.Raw(descendants_json(records, session_id)),
        complete=unresolved is UNSET,
    )
    if unresolved is UNSET:
        result.root = (ancestors[-1] if ancestors else target).to_wire()
    else:
        result.unresolvedParentId = unresolved
    return result


def children_index(records: Sequence[Record]) -> dict[Any, list[Record]]:
    """Records grouped by parent id, each group by createdAt then id (code-point order)."""
    groups: dict[Any, list[Record]] = defaultdict(list)
    for record in records:
        parent = record.header.parent_session
        if parent is not UNSET:
            groups[parent].append(record)
    for group in groups.values():
        group.sort(key=lambda r: (r.header.created_at, r.header.id))
    return groups


def descendants_json(records: Sequence[Record], root_id: str) -> bytes:
    """JSON of the SessionLineageNode[] below ``root_id``, built with an explicit stack."""
    groups = children_index(records)
    parts: list[bytes] = [b"["]
    # Each frame: the children still to emit at one level, and whether one was emitted already.
    stack: list[tuple[list[Record], int]] = [(groups.get(root_id, []), 0)]
    while stack:
        children, i = stack.pop()
        if i == len(children):
            parts.append(b"]")
            if stack:
                parts.append(b"}")
            continue
        stack.append((children, i + 1))
        if i:
            parts.append(b",")
        child = children[i]
        parts.append(b'{"session":' + jsoncodec.dumps(child.to_wire()) + b',"descendants":[')
        stack.append((groups.get(child.header.id, []), 0))
    return b"".join(parts)
