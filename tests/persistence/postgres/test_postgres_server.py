"""Two real servers over stdio mounted on one PostgreSQL store (postgres.md §7 "two servers"):
each checkpoints its own sessions and reads and searches the other's exactly; the password of
the mount URI appears in no result."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.builders import U, hdr
from tests.lsp_client import ENV, call, config, init_params
from tests.pg_server import PgDatabase


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server_a(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server_b(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def _write(client: LanguageClient, session_id: str, created: int, text: str) -> None:
    await call(
        client,
        "sessionStore/create",
        {"header": hdr(session_id, created, cwd="/team"), "seed": [U(0, text).to_value()]},
    )
    await call(
        client,
        "sessionStore/append",
        {"sessionId": session_id, "events": [{"type": "turn/start", "data": {"turn": 1}}]},
    )
    flushed = await call(client, "sessionStore/checkpoint", {"sessionId": session_id})
    assert flushed == {"flushed": {session_id: 2}}


@pytest.fixture
def team_uri(pg_database: PgDatabase) -> tuple[str, str]:
    password = "Team-" + secrets.token_hex(8)
    role = f"team_{secrets.token_hex(4)}"  # roles are cluster-wide
    with pg_database.connect() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")  # type: ignore[arg-type]
        conn.execute(f'GRANT ALL ON DATABASE "{pg_database.name}" TO {role}')  # type: ignore[arg-type]
    return pg_database.tcp_uri(role, password), password


async def test_two_servers_share_one_store(
    server_a: LanguageClient, server_b: LanguageClient, team_uri: tuple[str, str]
) -> None:
    uri, password = team_uri
    mounted = [
        await call(client, "sessionPersistence/mount", {"uri": uri})
        for client in (server_a, server_b)
    ]
    for result in mounted:
        assert result["writable"] is True and password not in result["uri"]
        assert result["uri"].startswith("postgresql://team_") and ":***@127.0.0.1:" in result["uri"]
    await _write(server_a, "from-a", 1, "alpha needle")
    await _write(server_b, "from-b", 2, "beta needle")
    for client in (server_a, server_b):
        listed = await call(client, "sessionQuery/listSessions")
        assert sorted(s["header"]["id"] for s in listed) == ["from-a", "from-b"]
        for session_id, text in (("from-a", "alpha needle"), ("from-b", "beta needle")):
            read = await call(client, "sessionQuery/readEvent", {"sessionId": session_id, "seq": 0})
            assert read["target"]["data"]["content"][0]["text"] == text
        found = await call(client, "sessionQuery/searchSessions", {"query": "needle", "limit": 5})
        assert sorted(h["header"]["id"] for h in found["items"]) == ["from-a", "from-b"]
    # B sees A's later append (a new revision) exactly.
    await call(
        server_a,
        "sessionStore/append",
        {
            "sessionId": "from-a",
            "events": [{"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}],
        },
    )
    await call(server_a, "sessionStore/checkpoint", {"sessionId": "from-a"})
    events = await call(server_b, "sessionQuery/listEvents", {"sessionId": "from-a"})
    mine = await call(server_a, "sessionQuery/listEvents", {"sessionId": "from-a"})
    assert [(e["seq"], e["type"]) for e in events] == [(e["seq"], e["type"]) for e in mine]
    assert events[-1]["type"] == "turn/end"
    status = await call(server_b, "sessionPersistence/status")
    assert password not in repr(status) and status["pendingEvents"] == 0


async def test_a_bad_uri_is_invalid_config_without_the_password(
    server_a: LanguageClient, team_uri: tuple[str, str]
) -> None:
    uri, password = team_uri
    with pytest.raises(JsonRpcException) as info:
        await call(server_a, "sessionPersistence/mount", {"uri": uri + "?poolSize=500"})
    assert (info.value.data or {}).get("code") == "SESSION_QUERY_INVALID_CONFIG"
    assert password not in info.value.message and ":***@127.0.0.1" in info.value.message
