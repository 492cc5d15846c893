"""Search requests and results on the wire (semantics.md §1.8, §6.6, §6.9), in the style of
model/wire.py.

Result headers are rebuilt from the index columns, so they never carry ``origin`` and keep an
optional key exactly when its column is non-null.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Raw, UnsetType

from .. import jsoncodec
from ..model.filters import SeqFilter, SessionFilter, SurfaceFilter, TimeFilter, TypeFilter
from ..model.params import Params, Spec
from ..model.wire import Wire
from .unreadable import UnreadableSession

SearchEventFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter


# Search requests are lenient (model/params.py): a search says SEARCH_DISABLED before it looks at
# any field, then checks them in §6.6's order with their own codes (search/request.py).


class SessionSearchRequest(Params):
    query: Annotated[Any, Spec(str)]
    sessionFilters: Annotated[Any, Spec(list[SessionFilter])] = UNSET
    eventFilters: Annotated[Any, Spec(list[SearchEventFilter])] = UNSET
    limit: Annotated[Any, Spec(int)] = UNSET
    cursor: Annotated[Any, Spec(str)] = UNSET


class SessionEventSearchRequest(Params):
    sessionId: Annotated[Any, Spec(str)]
    query: Annotated[Any, Spec(str)]
    filters: Annotated[Any, Spec(list[SearchEventFilter])] = UNSET
    limit: Annotated[Any, Spec(int)] = UNSET
    cursor: Annotated[Any, Spec(str)] = UNSET


class SessionEventSearchHit(Wire):
    sessionId: str
    seq: int
    type: Any
    time: Any
    surface: str
    snippet: str


class SessionSearchHit(Wire):
    header: Raw
    live: bool
    persisted: bool
    bestMatch: SessionEventSearchHit


class SessionSearchPage(Wire):
    items: list[SessionSearchHit]
    nextCursor: str | UnsetType = UNSET
    # [ours] (semantics.md §6.5): listed sessions left out because their log is unreadable;
    # present only when there are any, at most 100 entries, sorted by id.
    unreadable: list[UnreadableSession] | UnsetType = UNSET
    unreadableCount: int | UnsetType = UNSET


class SessionEventSearchPage(Wire):
    session: Raw
    items: list[SessionEventSearchHit]
    nextCursor: str | UnsetType = UNSET


_OPTIONAL = ("cwd", "parentSession", "seedLength", "delegationDepth", "agentPreset")


def header_raw(columns: tuple[Any, ...]) -> Raw:
    """``columns`` = (version, id, created_at, cwd, parent_session, seed_length,
    delegation_depth, agent_preset, source), as stored in a sessions table. ``source`` is JSON
    text, embedded as it is (importers.md §4.4)."""
    version, session_id, created_at, *optional, source = columns
    header: dict[str, Any] = {"version": version, "id": session_id, "createdAt": created_at}
    header.update(
        (key, value) for key, value in zip(_OPTIONAL, optional, strict=True) if value is not None
    )
    if source is not None:
        header["source"] = Raw(source.encode())
    return Raw(jsoncodec.dumps(header))
