"""Issue 25, over the wire: mounting an absent store is accepted and creates nothing until the
first checkpoint fills it; a refused mount names its real reason (not a database, not a
directory), not the permissions. A real server process on stdio in a private HOME."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from dsh_query_server.client import RpcError, StdioClient
from tests.persistence.mount.test_composite_wire import private_env

pytestmark = [pytest.mark.wire]


@pytest.fixture
def server(tmp_path: pathlib.Path) -> Iterator[StdioClient]:
    client = StdioClient(
        ["--persistence", "none"],
        env=private_env(tmp_path),
        initialization_options={"index": ":memory:"},
    )
    try:
        yield client
    finally:
        client.close()


def test_an_absent_store_mounts_and_is_made_by_the_first_checkpoint(server, tmp_path):
    directory = tmp_path / "not-yet"
    store = directory / "sessions.db"
    mounted = server.request("sessionPersistence/mount", {"uri": f"sqlite:{store}"})
    assert mounted["writable"] is True
    assert server.request("sessionQuery/listSessions") == []
    assert not directory.exists()  # reading made nothing
    server.request("sessionStore/create", {"header": {"version": 0, "id": "s", "createdAt": 1}})
    server.request(
        "sessionStore/append",
        {"sessionId": "s", "events": [{"type": "turn/start", "time": 2, "data": {"turn": 1}}]},
    )
    assert server.request("sessionStore/checkpoint", {"sessionId": "s"}) == {"flushed": {"s": 0}}
    assert store.stat().st_mode & 0o777 == 0o600
    assert directory.stat().st_mode & 0o777 == 0o700


def test_auto_reads_without_making_the_embedded_store(tmp_path):
    env = private_env(tmp_path)
    with StdioClient([], env=env, initialization_options={"index": ":memory:"}) as client:
        assert client.request("sessionPersistence/status")["writable"] is True
        assert client.request("sessionQuery/listSessions") == []
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_a_file_that_is_not_a_database_is_refused_as_such(server, tmp_path, mode):
    before = server.request("sessionPersistence/status")
    notes = tmp_path / "private" / "notes.txt"
    notes.parent.mkdir(mode=0o700)
    notes.write_text("these are notes, not sessions\n")
    notes.chmod(mode)
    with pytest.raises(RpcError) as info:
        server.request("sessionPersistence/mount", {"uri": f"sqlite:{notes}"})
    assert info.value.data_code == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert info.value.message == (
        f'failed to mount persistence: session database "{notes}" is not a SQLite database'
    )
    assert server.request("sessionPersistence/status") == before


def test_a_file_given_as_a_jsonl_root_is_refused_as_such(server, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("x\n")
    with pytest.raises(RpcError) as info:
        server.request("sessionPersistence/mount", {"uri": f"jsonl:{notes}"})
    assert info.value.message == (
        f'failed to mount persistence: jsonl root "{notes}" is a file, not a directory'
    )
