"""Node ids (protocol.md §6): their codec, parameter types and paging; the kinds are in kinds.py.

An id is ``base64url(JSON array)`` without padding; the array is ``[view, kind, *params]``.
Everything needed to expand the node or to find its parent is in the id, so the server
remembers nothing between requests and an id survives a server restart. Ids hold only immutable
facts (session ids, seqs, page offsets), never positions that shift as the corpus grows.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ... import errors, jsoncodec
from ...errors import QueryError
from ...values import is_nonneg_safe_integer

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


def invalid(message: str) -> QueryError:
    return QueryError(errors.INVALID_REQUEST, message)


def encode_id(key: Key) -> str:
    return base64.urlsafe_b64encode(jsoncodec.dumps(list(key))).rstrip(b"=").decode("ascii")


def page_bounds(total: int, offset: int, size: int = PAGE) -> tuple[int, int, bool]:
    """(start, end, more): the slice shown at ``offset`` and whether a "more" node follows.
    Pages have a fixed size, so the page of an entry follows from its index alone."""
    if total - offset <= size:
        return offset, total, False
    return offset, offset + size, True


def page_offset(index: int, size: int = PAGE) -> int:
    return (index // size) * size
