"""The two places where the server depends on how pygls 2.1 behaves rather than on a hook it
documents (docs/architecture.md "Where we depend on pygls internals"; tests/server/test_pygls_seam.py
pins each behaviour, so a pygls upgrade that changes one fails there first).

1. **pygls' own messages are re-encoded on their way out.** pygls writes the messages it makes
   itself (the answers to ``initialize``, ``shutdown`` and ``workspace/executeCommand``, its own
   errors) through the writer given to ``set_writer``; with ``include_headers=False`` that is one
   complete JSON body per ``write`` call. ``PyglsOutbound`` takes that body and hands the message
   to the protocol, which frames it with msgspec under the same write lock as the answers worker
   threads write, so the two never interleave. On the way the message is made to say what
   protocol.md §2 requires and pygls does not: an error whose request id is unknown carries
   ``"id": null`` (pygls omits the member), and pygls' internal errors, which carry a Python
   traceback in ``error.data.traceback``, become a plain -32603.
2. **Our experimental capabilities ride in the initialize result.** pygls computes the server
   capabilities after the user's ``initialize`` handler has run and has no option for
   ``experimental``; ``lsp_initialize`` (a builtin feature, a generator that pygls drives) is
   overridden to add them to the result it returns.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Generator
from typing import Any

import msgspec
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .. import errors
from .rpcerrors import INTERNAL_ERROR

log = logging.getLogger("dsh_query_server")

# pygls' internal errors (JsonRpcInternalError.of(exc_info)) put the traceback here.
TRACEBACK_KEY = "traceback"
INTERNAL_ANSWER = {
    "code": INTERNAL_ERROR,
    "message": "internal server error",
    "data": {"code": errors.INTERNAL},
}


def wire_message(message: Any) -> Any:
    """A message pygls made, as protocol.md §2 wants it on the wire."""
    if type(message) is not dict:
        return message
    if "result" in message and "method" not in message:
        # our own answers' member order, so an LSP answer looks like any other
        return {"jsonrpc": "2.0", "id": message.get("id"), "result": message["result"]}
    if "error" in message:
        message["id"] = message.get("id")  # an unknown id is sent as null, never omitted
        error = message["error"]
        if (
            isinstance(error, dict)
            and isinstance(error.get("data"), dict)
            and TRACEBACK_KEY in error["data"]
        ):
            log.error("internal error answered: %s", error.get("message"))
            message["error"] = dict(INTERNAL_ANSWER)
    return message


class PyglsOutbound:
    """The writer pygls is given (``set_writer(..., include_headers=False)``): each ``write`` is
    one JSON body, decoded and handed to ``deliver`` as a message. Decoding costs a few
    microseconds on messages pygls sends a handful of times per connection."""

    def __init__(self, deliver: Callable[[Any], None]) -> None:
        self._deliver = deliver

    def write(self, data: bytes) -> None:
        try:
            message = msgspec.json.decode(data)
        except msgspec.DecodeError:  # NaN or a lone surrogate, which json.dumps writes
            message = json.loads(data)
        self._deliver(wire_message(message))

    def close(self) -> None:
        """pygls closes its writer only in its exit handler, which never runs (protocol.py
        handles exit)."""


class CapabilitiesProtocol(LanguageServerProtocol):
    """Adds ``experimental`` to pygls' initialize result (see the module docstring)."""

    def experimental_capabilities(self) -> dict[str, Any] | None:
        return None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        offered = result.capabilities  # the LSP server capabilities, not persistence's
        offered.experimental = self.experimental_capabilities()
        return result


__all__ = ["CapabilitiesProtocol", "PyglsOutbound", "wire_message"]
