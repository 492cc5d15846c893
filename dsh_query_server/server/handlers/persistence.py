"""Persistence control (protocol.md §5): mount a backend by URI, unmount it, report the binding."""

from __future__ import annotations

from typing import Annotated, Any

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import MountResult, Runtime, StatusResult
from ...model.params import NoParams, Params, Spec
from ..registry import method
from ..tree import commands
from .store import EmptyResult


class MountParams(Params):
    """``"auto"``, one URI, or an array of 1-16 distinct URIs mounted as one (importers.md §4.3)."""

    uri: Annotated[Any, Spec(str | list[str])]  # the runtime checks it (INVALID_CONFIG)


@method(
    "sessionPersistence/mount",
    params=MountParams,
    result=MountResult,
    errors=(E.INVALID_CONFIG, E.PERSISTENCE_FAILED),
    command=commands.SERVER_MOUNT,
)
def mount(rt: Runtime, p: MountParams, token: CancelToken) -> MountResult:
    """Mount a backend by URI, replacing any mounted one (protocol.md §5)."""
    return rt.mount(p.uri)


@method(
    "sessionPersistence/unmount",
    params=NoParams,
    result=EmptyResult,
    errors=(),
    command=commands.SERVER_UNMOUNT,
)
def unmount(rt: Runtime, p: NoParams, token: CancelToken) -> EmptyResult:
    """Unmount the backend (protocol.md §5)."""
    rt.unmount()
    return EmptyResult()


# Inline: no I/O, only counters. It takes the live store's lock, which a producer call holds for
# a whole batch, so it runs inline only while no other request is in flight
# (QueryProtocol._inline).
@method(
    "sessionPersistence/status",
    params=NoParams,
    result=StatusResult,
    errors=(),
    inline=True,
    command=commands.SERVER_STATUS,
)
def status(rt: Runtime, p: NoParams, token: CancelToken) -> StatusResult:
    """The binding and the live events not yet persisted."""
    return rt.status()
