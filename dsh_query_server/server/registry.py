"""The method registry: each JSON-RPC method of ours is one typed handler, registered with
``@method`` beside the others of its feature (server/handlers/).

A handler receives the runtime, its params decoded into their struct (model/params.py: the
first field that breaks its ``Expect`` is the coded error, in the order of semantics.md §3.12)
and the request's cancellation token, and returns its result. The registration says everything
the rest of the project needs to know about the method: dispatch (server/dispatch.py), the
``workspace/executeCommand`` commands, the schema (schema/), the TypeScript types and
docs/reference.md (devtools/), the fuzz test and the MCP layer's checks all read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..model.params import Params, decode, fields

P = TypeVar("P", bound=Params)
R = TypeVar("R")
Handler = Callable[[Runtime, P, CancelToken], R]


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    params: type[Params]
    result: object  # the result's type as the schema states it (a handler may return it as Raw)
    errors: tuple[str, ...]  # the codes it answers, in the order of semantics.md §3.12
    handler: Callable[[Runtime, Any, CancelToken], object]
    # Answered on the thread that read it, no worker (QueryProtocol._inline): only for a method
    # that does no I/O and reads counters.
    inline: bool = False
    command: str | None = None  # its workspace/executeCommand id, when an editor runs it so

    @property
    def summary(self) -> str:
        """The handler's docstring, on one line: what the method does."""
        return " ".join((self.handler.__doc__ or "").split())

    def run(self, runtime: Runtime, params: dict[str, Any], token: CancelToken) -> object:
        """Decode ``params`` (a JSON object) and call the handler."""
        return self.handler(runtime, decode(self.params, params), token)


_REGISTERED: dict[str, Method] = {}


def method(
    name: str,
    *,
    params: type[P],
    result: object,
    errors: tuple[str, ...],
    inline: bool = False,
    command: str | None = None,
) -> Callable[[Handler[P, R]], Handler[P, R]]:
    """Register the decorated function as the handler of ``name``; it is returned unchanged."""

    def register(handler: Handler[P, R]) -> Handler[P, R]:
        if name in _REGISTERED:
            raise ValueError(f"{name} is registered twice")
        if not (handler.__doc__ or "").strip():
            raise ValueError(f"{name}: the handler's docstring is the method's summary")
        fields(params)  # a params struct whose failures are not all coded fails here, at import
        _REGISTERED[name] = Method(name, params, result, errors, handler, inline, command)
        return handler

    return register


def registered() -> Mapping[str, Method]:
    """Every method registered so far, in registration order (read-only)."""
    return MappingProxyType(_REGISTERED)
