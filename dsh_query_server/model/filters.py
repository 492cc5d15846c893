"""Filter clauses (semantics.md §4) as a tagged union on ``kind``.

These are the owned copies a request is validated into: a list clause is ``{kind, values}``, a
range clause keeps only its present bounds, a text clause is ``{kind, text}``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class _List(msgspec.Struct, frozen=True, tag_field="kind"):
    values: tuple[Any, ...]


class _Range(
    msgspec.Struct,
    frozen=True,
    tag_field="kind",
    omit_defaults=True,
    rename={"lo": "from", "hi": "to"},
):
    lo: float | int | UnsetType = UNSET
    hi: float | int | UnsetType = UNSET

    def accepts(self, value: Any) -> bool:
        return (self.lo is UNSET or self.lo <= value) and (self.hi is UNSET or value <= self.hi)


class IdFilter(_List, frozen=True, tag="id"):
    pass


class CwdFilter(_List, frozen=True, tag="cwd"):
    pass


class ParentFilter(_List, frozen=True, tag="parent"):
    pass


class AvailabilityFilter(_List, frozen=True, tag="availability"):
    pass


class CreatedAtFilter(_Range, frozen=True, tag="created-at"):
    pass


class SeqFilter(_Range, frozen=True, tag="seq"):
    pass


class TimeFilter(_Range, frozen=True, tag="time"):
    pass


class TypeFilter(_List, frozen=True, tag="type"):
    pass


class SurfaceFilter(_List, frozen=True, tag="surface"):
    pass


class TextFilter(msgspec.Struct, frozen=True, tag_field="kind", tag="text"):
    text: str


SessionFilter = IdFilter | CwdFilter | ParentFilter | AvailabilityFilter | CreatedAtFilter
EventFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter | TextFilter

SESSION_KINDS: dict[str, type] = {
    "id": IdFilter,
    "cwd": CwdFilter,
    "created-at": CreatedAtFilter,
    "parent": ParentFilter,
    "availability": AvailabilityFilter,
}
EVENT_KINDS: dict[str, type] = {
    "seq": SeqFilter,
    "time": TimeFilter,
    "type": TypeFilter,
    "surface": SurfaceFilter,
    "text": TextFilter,
}
NULLABLE_KINDS = frozenset({"cwd", "parent"})
LITERALS = {
    "availability": frozenset({"live", "persisted"}),
    "surface": frozenset({"current", "shadowed", "log-only"}),
}


def kind_of(clause: Any) -> str:
    return clause.__struct_config__.tag
