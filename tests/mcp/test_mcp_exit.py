"""An MCP server exits once its client closes stdin (the MCP stdio transport's end of a
session), also when it asks a hub: closing the hub connection must not wait for the thread still
reading it (hub/client.py ``close``). Real processes: ``dsh-query mcp`` and the hub it starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hub.hub_helpers import using_hubs
from tests.mcp_helpers import private_env, write_corpus

pytestmark = pytest.mark.wire


@pytest.mark.parametrize("hub", [True, False], ids=["hub", "no-hub"])
def test_the_server_exits_when_stdin_closes(tmp_path: Path, hub: bool) -> None:
    uri = f"jsonl:{tmp_path / 'corpus'}?compression=none"
    write_corpus(uri)
    env = private_env(tmp_path)
    args = [sys.executable, "-m", "dsh_query_server.cli", "mcp", "--persistence", uri]
    if not hub:
        args.append("--no-hub")
    with using_hubs(env["XDG_RUNTIME_DIR"]):
        process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
        )
        assert process.stdin is not None and process.stdout is not None
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        }
        process.stdin.write(json.dumps(hello).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        ask = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        ask["params"] = {"name": "session_list", "arguments": {}}
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        process.stdin.write(json.dumps(ask).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 2  # the hub was asked
        process.stdin.close()
        try:
            status = process.wait(timeout=10)
        finally:
            process.kill()
        assert status == 0
