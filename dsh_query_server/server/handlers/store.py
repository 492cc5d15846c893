"""Producer methods (protocol.md §4): the live store's sessions, created, appended to, removed
and checkpointed. Headers and events are checked by the store, with its own codes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...model import wire
from ...model.documents import Doc, SessionEvent, SessionHeader, SurfaceReplace
from ...model.params import Expect, Params, SessionIdParams, Spec
from ..registry import method
from ..tree import commands


class CreateParams(Params):
    header: Annotated[Any, Spec(SessionHeader)]  # SESSION_STORE_INVALID_HEADER
    seed: Annotated[Any, Spec(list[SessionEvent])] = None  # null is no seed, as absent


class CreateResult(msgspec.Struct):
    header: Raw  # a SessionHeader (schema/shapes.py RAW_FIELDS)


class AppendEvent(Doc):
    """The server assigns ``seq``, and ``time`` (now, epoch ms) when it is absent."""

    type: str
    data: Any
    time: int | UnsetType = UNSET
    surfaceOp: Literal["append"] | SurfaceReplace | UnsetType = UNSET
    sourceEventSeqs: list[int] | UnsetType = UNSET


class AppendParams(Params):
    sessionId: Annotated[str, Expect("a string", code=E.STORE_INVALID_EVENT)]
    events: Annotated[Any, Spec(list[AppendEvent])]  # SESSION_STORE_INVALID_EVENT


class AppendResult(msgspec.Struct):
    firstSeq: int
    lastSeq: int


class EmptyResult(msgspec.Struct):
    pass


class CheckpointParams(Params):
    sessionId: Annotated[str | None, Expect("a string")] = None  # null or absent: every session


class CheckpointResult(msgspec.Struct):
    """Per targeted live session with events: the last seq the backend now holds."""

    flushed: dict[str, int]


@method(
    "sessionStore/create",
    params=CreateParams,
    result=CreateResult,
    errors=(E.STORE_INVALID_HEADER, E.STORE_INVALID_EVENT, E.STORE_DUPLICATE_SESSION),
)
def create(rt: Runtime, p: CreateParams, token: CancelToken) -> CreateResult:
    """Create a live session, optionally with a seed log (protocol.md §4)."""
    return CreateResult(wire.raw(rt.store.create(p.header, p.seed)))


@method(
    "sessionStore/append",
    params=AppendParams,
    result=AppendResult,
    errors=(E.STORE_INVALID_EVENT, E.STORE_SESSION_NOT_FOUND),
)
def append(rt: Runtime, p: AppendParams, token: CancelToken) -> AppendResult:
    """Append events to a live session, atomically (protocol.md §4)."""
    return AppendResult(*rt.store.append(p.sessionId, p.events))


@method(
    "sessionStore/remove",
    params=SessionIdParams,
    result=EmptyResult,
    errors=(E.INVALID_REQUEST, E.STORE_SESSION_NOT_FOUND, E.STORE_PERSISTENCE_FAILED),
)
def remove(rt: Runtime, p: SessionIdParams, token: CancelToken) -> EmptyResult:
    """Drop a live session after flushing its pending events (protocol.md §4)."""
    rt.remove(p.sessionId)
    return EmptyResult()


@method(
    "sessionStore/checkpoint",
    params=CheckpointParams,
    result=CheckpointResult,
    errors=(
        E.INVALID_REQUEST,
        E.STORE_SESSION_NOT_FOUND,
        E.STORE_READ_ONLY,
        E.STORE_PERSISTENCE_FAILED,
    ),
    command=commands.SERVER_CHECKPOINT,
)
def checkpoint(rt: Runtime, p: CheckpointParams, token: CancelToken) -> CheckpointResult:
    """Write every not-yet-persisted live event to the mounted backend now (protocol.md §4)."""
    return CheckpointResult(rt.checkpointer.flush(p.sessionId))
