"""pytest-lsp plumbing: a test client that keeps custom results and params as plain JSON."""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

from lsprotocol import types
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

SERVER = [sys.executable, "-m", "dsh_query_server"]
# The environment of a server started from this checkout (not an installed copy).
ENV = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parent.parent)}


def plain_converter():
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    client.did_change: list[Any] = []  # type: ignore[attr-defined]

    @client.feature("sessionQuery/didChange")
    def on_change(params: Any) -> None:
        client.did_change.append(params)  # type: ignore[attr-defined]

    return client


def config(
    *flags: str, env: dict[str, str] | None = None, server: list[str] = SERVER
) -> ClientServerConfig:
    """``server``: the command (builders.TEST_SERVER for one that mounts test: backends)."""
    return ClientServerConfig(
        server_command=[*server, *flags], client_factory=make_client, server_env=env
    )


def init_params(options: dict[str, Any] | None = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(), initialization_options=options or {}
    )


async def call(client: LanguageClient, method: str, params: Any = None) -> Any:
    """A request's result (a JSON-RPC error raises)."""
    return await client.protocol.send_request_async(method, params if params is not None else {})
