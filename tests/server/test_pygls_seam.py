"""What the server relies on in pygls 2.1 beyond the hooks it documents (server/pygls_seam.py,
docs/architecture.md "Where we depend on pygls internals"). Each test drives a bare pygls
``LanguageServer`` (no code of ours in the path unless named), so a pygls upgrade that changes one
of these behaviours fails here, not in production.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pygls
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from dsh_query_server.server.pygls_seam import (
    INTERNAL_ANSWER,
    CapabilitiesProtocol,
    PyglsOutbound,
    wire_message,
)


class Recorder:
    """A pygls writer that keeps what each write call was given."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        pass

    def messages(self) -> list[Any]:
        return [json.loads(w) for w in self.writes]


def server_with(protocol_cls: Any = None) -> tuple[LanguageServer, Recorder]:
    kwargs = {} if protocol_cls is None else {"protocol_cls": protocol_cls}
    server = LanguageServer("seam", "0", **kwargs)
    recorder = Recorder()
    server.protocol.set_writer(recorder, include_headers=False)
    return server, recorder


def incoming(server: LanguageServer, message: dict[str, Any]) -> None:
    """A message as our transports hand it to pygls: structured, then handle_message."""
    structured: Any = server.protocol.structure_message(message)
    server.protocol.handle_message(structured)


def initialize(msg_id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "initialize",
        "params": {"capabilities": {}},
    }


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_pygls_is_the_pinned_minor_version():
    version = getattr(pygls, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("pygls")
    assert version.startswith("2.1."), version


async def test_without_headers_each_write_is_one_whole_json_body():
    server, recorder = server_with()
    server.protocol.notify("sessionQuery/didChange", {"corpus": True})
    incoming(server, initialize())
    await settle()
    assert all(
        isinstance(w, bytes) and not w.startswith(b"Content-Length") for w in recorder.writes
    )
    notification, answer = recorder.messages()
    assert notification == {
        "method": "sessionQuery/didChange",
        "jsonrpc": "2.0",
        "params": {"corpus": True},
    }
    assert answer["id"] == 1 and "capabilities" in answer["result"]


async def test_an_internal_error_carries_its_traceback_and_is_made_plain():
    server, recorder = server_with()

    @server.command("boom")
    def boom(ls: LanguageServer, *args: Any) -> None:
        raise RuntimeError("secret detail")

    incoming(server, initialize())
    incoming(
        server,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "workspace/executeCommand",
            "params": {"command": "boom"},
        },
    )
    await settle()
    error = recorder.messages()[-1]
    assert error["id"] == 2 and "traceback" in error["error"]["data"]
    assert wire_message(error) == {"error": INTERNAL_ANSWER, "jsonrpc": "2.0", "id": 2}


async def test_an_error_for_an_unknown_id_leaves_the_id_out_and_is_given_null():
    server, recorder = server_with()
    incoming(server, {"jsonrpc": "2.0", "id": None, "method": "no/such", "params": {}})
    await settle()
    error = recorder.messages()[-1]
    assert error["error"]["code"] == -32601 and error.get("id") is None
    assert "id" in wire_message(dict(error)) and wire_message(dict(error))["id"] is None


async def test_a_coded_failure_keeps_its_data():
    server, recorder = server_with()

    @server.command("coded")
    def coded(ls: LanguageServer, *args: Any) -> None:
        raise JsonRpcException(message="nope", code=-32602, data={"code": "X"})

    incoming(server, initialize())
    incoming(
        server,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "workspace/executeCommand",
            "params": {"command": "coded"},
        },
    )
    await settle()
    error = wire_message(recorder.messages()[-1])
    assert error["error"] == {"code": -32602, "message": "nope", "data": {"code": "X"}}


async def test_initialize_runs_our_handler_before_the_capabilities_are_read():
    seen: list[str] = []

    class Probe(CapabilitiesProtocol):
        def experimental_capabilities(self) -> dict[str, Any]:
            seen.append("capabilities")
            return {"probe": True}

    server, recorder = server_with(Probe)

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: LanguageServer, params: types.InitializeParams) -> None:
        seen.append(f"handler {params.initialization_options}")

    incoming(server, {**initialize(), "params": {"capabilities": {}, "initializationOptions": 7}})
    await settle()
    assert seen == ["handler 7", "capabilities"]
    result = recorder.messages()[-1]["result"]
    assert result["capabilities"]["experimental"] == {"probe": True}
    assert server.protocol.fm.builtin_features[types.INITIALIZE].__func__ is (Probe.lsp_initialize)


async def test_shutdown_is_answered_only_after_our_async_handler_returns():
    server, recorder = server_with()
    release = asyncio.Event()

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: LanguageServer, *args: Any) -> None:
        await release.wait()

    incoming(server, initialize())
    incoming(server, {"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    await settle()
    assert [m.get("id") for m in recorder.messages()] == [1]
    release.set()
    await settle()
    assert recorder.messages()[-1] == {"id": "bye", "jsonrpc": "2.0", "result": None}


async def test_a_command_handler_sees_its_request_id():
    server, recorder = server_with()
    ids: list[Any] = []

    @server.command("who")
    async def who(ls: LanguageServer, *args: Any) -> None:
        ids.append(ls.protocol.msg_id)

    incoming(server, initialize())
    incoming(
        server,
        {
            "jsonrpc": "2.0",
            "id": "w1",
            "method": "workspace/executeCommand",
            "params": {"command": "who"},
        },
    )
    await settle()
    assert ids == ["w1"]


def test_structuring_names_the_cancel_type_and_refuses_bad_lsp_params():
    server, _ = server_with()
    cancel = server.protocol.structure_message(
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 4}}
    )
    assert type(cancel) is types.CancelNotification and cancel.params.id == 4
    with pytest.raises(Exception):  # noqa: B017 - pygls raises its own JsonRpcInvalidParams
        server.protocol.structure_message(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 5}}
        )
    assert types.SHUTDOWN in server.protocol.fm.builtin_features
    assert isinstance(server.protocol.fm.features, dict)


def test_the_outbound_writer_decodes_what_json_dumps_writes():
    delivered: list[Any] = []
    writer = PyglsOutbound(delivered.append)
    writer.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": "\ud800"}).encode())
    writer.write(json.dumps({"jsonrpc": "2.0", "id": 2, "result": float("nan")}).encode())
    assert delivered[0] == {"jsonrpc": "2.0", "id": 1, "result": "\ud800"}
    assert delivered[1]["id"] == 2
