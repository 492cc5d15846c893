"""The hub's own methods (hub.md §2): ``hub/status``, ``hub/stop``, ``hub/render`` and
``hub/callTool``, registered like the server's (server/registry.py) and answered only on a hub's
connections (hub/methods.py); a private ``serve`` answers them -32601 like any unknown method.

A handler reaches the hub that serves its runtime through ``HubHost`` (service.py registers
itself with ``serve_runtime``); ``hub/callTool`` runs the tool with the ``ToolRunner`` the hub was
given (the MCP layer's, mcp/bridge.py), since the hub sits below the MCP layer.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Annotated, Any, Protocol

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .. import errors as E
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..errors import QueryError
from ..model.params import Expect, NoParams, Params, Spec
from ..server.dispatch import invoke
from ..server.methods import METHODS
from ..server.registry import method
from .titled import indented, titled_listing

# -- hub/status ------------------------------------------------------------------------------------


class HubIndex(msgspec.Struct):
    """The configured index path, and the file this hub holds (a slot when another process holds
    the first, search/ownership.py); ``file`` is null until the index is opened."""

    path: str
    file: str | None


class HubTcp(msgspec.Struct):
    """With ``--tcp``: where the hub listens and the file holding the token a client presents."""

    host: str
    port: int
    tokenFile: str


class MountFailure(msgspec.Struct):
    """Why the configured persistence is not mounted: the hub could not mount it when it started
    (the mount's code and message; the hub then serves live sessions alone)."""

    code: str
    message: str


class HubStatus(msgspec.Struct, omit_defaults=True):
    """A hub's process, key, socket and connections, and the resolved configuration it serves
    (passwords redacted)."""

    pid: int
    key: str
    socket: str
    startedAt: int
    connections: int
    uptimeMs: int
    config: dict[str, Any]
    index: HubIndex
    version: str
    tcp: HubTcp | UnsetType = UNSET
    mountFailure: MountFailure | UnsetType = UNSET


class HubStopped(msgspec.Struct):
    """``{}``: the hub answers, then leaves as on SIGTERM."""


# -- hub/render --------------------------------------------------------------------------------------


def _query_method(name: str) -> bool:
    return name in METHODS


# The methods whose result is a list of session records, which ``titles`` may name.
LISTINGS = ("sessionQuery/listSessions", "sessionQuery/filterSessions")


class RenderParams(Params):
    """A method of the server's table and its params; ``titles`` (with a session listing): each
    record with ``title``, the session's current title where it has a non-blank one, as
    ``dsh-query sessions --json`` prints it."""

    method: Annotated[str, Expect("a query method", check=_query_method)]
    params: Annotated[Any, Spec(dict[str, Any])] = None  # the method checks them
    titles: Annotated[bool, Expect("a boolean")] = False


# The result is the rendered method's own, as its entry states it.
RenderResult = Annotated[Any, msgspec.Meta(description="the result of `method`, as it states it")]
# Every code a rendered method answers, as its own.
RENDER_ERRORS = tuple(
    dict.fromkeys([E.INVALID_REQUEST, *(c for m in METHODS.values() for c in m.errors)])
)


# -- hub/callTool ------------------------------------------------------------------------------------


class ToolWorkspace(msgspec.Struct):
    """The MCP side's workspace after its workspace step (tools.md §1.2)."""

    roots: list[str]
    base: str
    source: str = ""  # where the roots came from (tools.md §1.2), for the answers that name it


def _positive(value: int) -> bool:
    return value > 0


class CallToolParams(Params):
    """One MCP tool call (tools.md §1) as ``dsh-query mcp`` forwards it."""

    name: Annotated[str, Expect("a tool name")]  # the runner refuses a name it has no tool for
    arguments: Annotated[dict[str, Any], Expect("an object")]
    workspace: Annotated[
        ToolWorkspace, Expect("an object {roots: strings, base: string, source?: string}")
    ]
    caller: Annotated[str | None, Expect("a string or null")] = None
    maxResults: Annotated[int, Expect("a positive integer", check=_positive)] = 100


class ToolFailure(msgspec.Struct):
    """The tool's sanitized error (tools.md §1.10)."""

    code: str
    message: str


class CallToolResult(msgspec.Struct, omit_defaults=True):
    """One of: ``{text, structured}``; ``{error}``; ``{interrupted: true}`` (the request was
    cancelled: the MCP side tells its deadline from a cancellation)."""

    text: str | UnsetType = UNSET
    structured: dict[str, Any] | UnsetType = UNSET
    error: ToolFailure | UnsetType = UNSET
    interrupted: bool | UnsetType = UNSET


# What runs a tool call against the hub's runtime.
ToolRunner = Callable[[Runtime, CallToolParams, CancelToken], CallToolResult]


# -- the hub behind a runtime ----------------------------------------------------------------------


class HubHost(Protocol):
    def status(self) -> HubStatus: ...

    def stop(self) -> None:
        """Begin the hub's orderly exit once the answers in flight are written (any thread)."""
        ...

    def run_tool(self, rt: Runtime, p: CallToolParams, token: CancelToken) -> CallToolResult: ...


_HOSTS: weakref.WeakKeyDictionary[Runtime, HubHost] = weakref.WeakKeyDictionary()


def serve_runtime(runtime: Runtime, host: HubHost) -> None:
    """``runtime`` is ``host``'s: the hub's methods on its connections answer through it."""
    _HOSTS[runtime] = host


# -- the methods ---------------------------------------------------------------------------------------


@method("hub/status", params=NoParams, result=HubStatus, errors=())
def status(rt: Runtime, p: NoParams, token: CancelToken) -> HubStatus:
    """The hub's process, key, socket, connections and configuration (hub.md §2)."""
    return _HOSTS[rt].status()


@method("hub/stop", params=NoParams, result=HubStopped, errors=())
def stop(rt: Runtime, p: NoParams, token: CancelToken) -> HubStopped:
    """Answer ``{}``, then exit as on SIGTERM (hub.md §2)."""
    _HOSTS[rt].stop()
    return HubStopped()


@method("hub/render", params=RenderParams, result=RenderResult, errors=RENDER_ERRORS)
def render(rt: Runtime, p: RenderParams, token: CancelToken) -> Raw:
    """[ours] A method's result as the command line prints ``--json`` (indented by two spaces),
    so a thin client writes it without decoding it (hub.md §2); its errors are the method's."""
    return rendered(rt, p, token)


@method("hub/callTool", params=CallToolParams, result=CallToolResult, errors=(E.INVALID_REQUEST,))
def call_tool(rt: Runtime, p: CallToolParams, token: CancelToken) -> CallToolResult:
    """[ours] Run one of ``dsh-query mcp``'s tools against the hub's service (hub.md §2)."""
    return _HOSTS[rt].run_tool(rt, p, token)


def rendered(rt: Runtime, p: RenderParams, token: CancelToken) -> Raw:
    """The method's result indented, with each record's title when ``titles`` asks for them
    (titled.py)."""
    if not p.titles:
        return indented(invoke(METHODS[p.method], rt, p.params, token))
    if p.method not in LISTINGS:
        raise QueryError(E.INVALID_REQUEST, f"titles needs {' or '.join(LISTINGS)}")
    return titled_listing(rt, invoke(METHODS[p.method], rt, p.params, token), token)


__all__ = [
    "CallToolParams",
    "CallToolResult",
    "HubHost",
    "HubStatus",
    "MountFailure",
    "ToolFailure",
    "ToolRunner",
    "ToolWorkspace",
    "serve_runtime",
]
