"""A workspace scope applied inside one cross-session search: the MCP ``session_search`` steps
2–4 and 7 of tools.md §1.6, read off the index the search's own reconcile just brought in line
with the live store and the binding, instead of a ``listSessions`` of the whole corpus per call.

``V``, the visible sessions, is what a listing at that moment would give: live sessions, plus the
persisted ones while a backend is bound (a live row shadows its persisted one, and §1.2 makes
their cwds equal). The distinct cwds are remembered per index state, so an unchanged corpus
costs no scan; any reconcile that writes moves ``SearchIndex.writes`` and drops the memo.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .. import jsoncodec
from ..model.filters import CwdFilter, ParentFilter
from .reconcile import SearchIndex, View
from .schema import sql_text


@dataclass(frozen=True, slots=True)
class Scope:
    """The caller's workspace: ``visible(cwd)`` is the header rule of tools.md §1.2, and
    ``roots`` determine it (the normalized roots and the base relative paths join). ``parents`` are the requested parent ids (None: no parent clause), and
    ``include_roots`` adds ``null`` to that clause."""

    visible: Callable[[object], bool]
    roots: tuple[str, ...]
    parents: tuple[str, ...] | None = None
    include_roots: bool = False
    key: str = field(init=False)

    def __post_init__(self) -> None:
        # Cursors bind the scope too: a page of one workspace never continues another's.
        digest = hashlib.sha256(
            jsoncodec.dumps([self.roots, self.parents, self.include_roots])
        ).hexdigest()
        object.__setattr__(self, "key", digest)


@dataclass(frozen=True, slots=True)
class Clauses:
    """The scope's session clauses, or ``empty`` when no session can match (no visible cwd, or a
    parent clause with no value left)."""

    clauses: tuple[Any, ...]
    empty: bool


class ScopeReader:
    """Per index: the distinct cwds, remembered until the index is written or rebound."""

    def __init__(self) -> None:
        self._state: tuple[SearchIndex, int, bool] | None = None
        self._cwds: tuple[str, ...] = ()
        self._visible: dict[tuple[str, ...], tuple[str, ...]] = {}

    def _all_cwds(self, index: SearchIndex, bound: bool) -> tuple[str, ...]:
        state = (index, index.writes, bound)
        if self._state is None or not all(map(_same, self._state, state)):
            sql = "SELECT cwd FROM live_sessions WHERE cwd IS NOT NULL"
            if bound:
                sql += " UNION SELECT cwd FROM persisted_sessions WHERE cwd IS NOT NULL"
            self._cwds = tuple(sorted({cwd for (cwd,) in index.conn.execute(sql)}))
            self._visible = {}
            self._state = state
        return self._cwds

    def clauses(self, index: SearchIndex, view: View, scope: Scope) -> Clauses:
        """Steps 3 and 4: the parent clause (requested ids that are visible sessions, plus null
        for root sessions) and the cwd clause (the visible sessions' distinct cwds)."""
        cwds = self._all_cwds(index, view.bound)
        visible = self._visible.get(scope.roots)
        if visible is None:
            visible = self._visible[scope.roots] = tuple(c for c in cwds if scope.visible(c))
        clauses: list[Any] = []
        if scope.parents is not None or scope.include_roots:
            known = visible_ids(index, view, scope.parents or (), scope.visible)
            values: list[str | None] = [p for p in scope.parents or () if p in known]
            if scope.include_roots:
                values.append(None)
            if not values:
                return Clauses((), True)
            clauses.append(ParentFilter(tuple(values)))
        if not visible:
            return Clauses((), True)
        clauses.append(CwdFilter(visible))
        return Clauses(tuple(clauses), False)


def _same(a: object, b: object) -> bool:
    return a is b or a == b


def visible_ids(
    index: SearchIndex, view: View, ids: Iterable[object], visible: Callable[[object], bool]
) -> frozenset[str]:
    """The ids among ``ids`` that name a session of the index's current view whose cwd is
    visible: its live row, else (while bound) its persisted row."""
    wanted = {sql_text(sid): sid for sid in ids if isinstance(sid, str)}
    if not wanted:
        return frozenset()
    keys = msgspec.json.encode(list(wanted)).decode()
    cwds: dict[str, Any] = {}
    tables = ("persisted_sessions", "live_sessions") if view.bound else ("live_sessions",)
    for table in tables:  # live rows last: they shadow the persisted ones
        sql = f"SELECT id, cwd FROM {table} WHERE id IN (SELECT value FROM json_each(?))"
        cwds.update(index.conn.execute(sql, (keys,)))
    return frozenset(wanted[key] for key, cwd in cwds.items() if visible(cwd))
