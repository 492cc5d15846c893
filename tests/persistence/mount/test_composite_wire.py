"""Composite mounts and ``auto`` over the wire (importers.md §4.1-§4.3): a real server process on
stdio, real members (an SQLite store, claude: and codex: homes built from the spec fixtures), and
every server in a private HOME."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.client import RpcError, StdioClient
from dsh_query_server.persistence.mount.composite import MAX_MEMBERS
from tests.import_helpers import SPEC

pytestmark = [pytest.mark.wire, pytest.mark.slow]

ROOT = str(pathlib.Path(__file__).resolve().parents[3])
CODEX_ID = "019b7e26-5500-7000-8000-0000000000f1"
CLAUDE_IDS = ["claude-demo", "claude-demo/agent-ab12"]


def private_env(tmp: pathlib.Path, **extra: str) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DSH_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME")
    }
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(tmp / "state"),
        XDG_CACHE_HOME=str(tmp / "cache"),
        PYTHONPATH=ROOT,
        **extra,
    )
    return env


@pytest.fixture
def homes(tmp_path: pathlib.Path) -> dict[str, str]:
    claude = shutil.copytree(SPEC / "claude", tmp_path / "claude")
    codex = shutil.copytree(SPEC / "codex", tmp_path / "codex")
    return {
        "sqlite": f"sqlite:{tmp_path}/store.db",
        "claude": f"claude:{claude}",
        "codex": f"codex:{codex}",
    }


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


def ids(client: StdioClient) -> list[str]:
    return sorted(r["header"]["id"] for r in client.request("sessionQuery/listSessions"))


def error_code(exc: pytest.ExceptionInfo[RpcError]) -> Any:
    return exc.value.data_code


def test_an_array_mounts_as_one_binding_with_its_members(server, homes):
    uris = [homes["sqlite"], homes["claude"], homes["codex"]]
    mounted = server.request("sessionPersistence/mount", {"uri": uris})
    members = [
        {"uri": homes["sqlite"], "writable": True},
        {"uri": homes["claude"], "writable": False},
        {"uri": homes["codex"], "writable": False},
    ]
    assert mounted == {"uri": uris, "writable": True, "members": members}
    assert server.request("sessionPersistence/status") == {
        "uri": uris,
        "writable": True,
        "pendingEvents": 0,
        "members": members,
    }
    assert ids(server) == sorted([*CLAUDE_IDS, CODEX_ID])
    # Reads go to the member that listed the id.
    for sid in (CODEX_ID, "claude-demo"):
        assert server.request("sessionQuery/listEvents", {"sessionId": sid})


def test_one_uri_answers_one_member_and_unmount_none(server, homes):
    mounted = server.request("sessionPersistence/mount", {"uri": homes["claude"]})
    assert mounted == {
        "uri": homes["claude"],
        "writable": False,
        "members": [{"uri": homes["claude"], "writable": False}],
    }
    server.request("sessionPersistence/unmount")
    assert server.request("sessionPersistence/status") == {
        "uri": None,
        "writable": False,
        "pendingEvents": 0,
        "members": [],
    }


# Mounts a status may follow: by index into homes' keys; None unmounts.
MOUNTS = [["sqlite", "claude", "codex"], ["claude"], ["codex", "claude"], ["sqlite"], None]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(range(len(MOUNTS))), min_size=1, max_size=6))
def test_status_answers_the_members_of_the_current_mount(server, homes, picks):
    """status classifies a mount's members once (runtime.Runtime._members): after any sequence
    of mounts, remounts of the same value and unmounts, it answers the current mount's."""
    writable = {"sqlite": True, "claude": False, "codex": False}
    for pick in picks:
        names = MOUNTS[pick]
        if names is None:
            server.request("sessionPersistence/unmount")
            expected: dict[str, Any] = {"uri": None, "writable": False, "members": []}
        else:
            uris = [homes[n] for n in names]
            uri: Any = uris if len(uris) > 1 else uris[0]
            members = [{"uri": homes[n], "writable": writable[n]} for n in names]
            expected = {"uri": uri, "writable": any(writable[n] for n in names)}
            expected["members"] = members
            mounted = server.request("sessionPersistence/mount", {"uri": uri})
            assert mounted == expected
        for _ in range(2):  # the second status answers from what the first classified
            assert server.request("sessionPersistence/status") == {**expected, "pendingEvents": 0}


@pytest.mark.parametrize(
    "uri",
    [
        [],
        ["auto"],
        42,
        None,
        {"a": 1},
        ["sqlite:/a.db", "sqlite:/a.db"],
        [f"sqlite:/m{i}.db" for i in range(MAX_MEMBERS + 1)],
        ["sqlite:relative.db"],
        ["sqlite:/a.db", 7],
        "nope:/x",
    ],
)
def test_a_bad_persistence_value_is_invalid_config_and_keeps_the_binding(server, homes, uri):
    server.request("sessionPersistence/mount", {"uri": homes["claude"]})
    with pytest.raises(RpcError) as exc:
        server.request("sessionPersistence/mount", {"uri": uri})
    assert exc.value.code == -32602 and error_code(exc) == "SESSION_QUERY_INVALID_CONFIG"
    assert server.request("sessionPersistence/status")["uri"] == homes["claude"]


def test_mounting_is_atomic(server, homes, tmp_path):
    server.request("sessionPersistence/mount", {"uri": homes["codex"]})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(RpcError) as exc:  # the second member cannot be opened
        server.request(
            "sessionPersistence/mount", {"uri": [homes["claude"], f"sqlite:{blocker}/s.db"]}
        )
    assert exc.value.code == -32803 and error_code(exc) == "SESSION_QUERY_PERSISTENCE_FAILED"
    status = server.request("sessionPersistence/status")
    assert status["uri"] == homes["codex"] and status["members"] == [
        {"uri": homes["codex"], "writable": False}
    ]
    assert ids(server) == [CODEX_ID]


def test_an_id_listed_by_two_members_fails_the_listing(server, homes, tmp_path):
    twin = shutil.copytree(SPEC / "claude", tmp_path / "claude-twin")
    server.request("sessionPersistence/mount", {"uri": [homes["claude"], f"claude:{twin}"]})
    with pytest.raises(RpcError) as exc:
        server.request("sessionQuery/listSessions")
    assert error_code(exc) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert 'persistence members 0 and 1 both list session "claude-demo"' in exc.value.message


def test_checkpoints_go_to_the_first_writable_member(server, homes, tmp_path):
    store = homes["sqlite"]
    mounted = server.request("sessionPersistence/mount", {"uri": [homes["claude"], store]})
    assert mounted["writable"] is True
    server.request("sessionStore/create", {"header": {"version": 0, "id": "mine", "createdAt": 1}})
    server.request(
        "sessionStore/append",
        {"sessionId": "mine", "events": [{"type": "turn/start", "time": 2, "data": {"turn": 1}}]},
    )
    assert server.request("sessionStore/checkpoint", {"sessionId": "mine"}) == {
        "flushed": {"mine": 0}
    }
    server.request("sessionStore/remove", {"sessionId": "mine"})
    server.request("sessionPersistence/mount", {"uri": store})
    assert ids(server) == ["mine"]  # the SQLite member holds it, the claude: home does not


def test_a_checkpoint_refused_for_an_id_another_member_lists_keeps_the_live_data(server, homes):
    server.request("sessionPersistence/mount", {"uri": [homes["sqlite"], homes["claude"]]})
    server.request(
        "sessionStore/create", {"header": {"version": 0, "id": "claude-demo", "createdAt": 1}}
    )
    server.request(
        "sessionStore/append",
        {
            "sessionId": "claude-demo",
            "events": [{"type": "turn/start", "time": 2, "data": {"turn": 1}}],
        },
    )
    with pytest.raises(RpcError) as exc:
        server.request("sessionStore/checkpoint", {"sessionId": "claude-demo"})
    assert error_code(exc) == "SESSION_STORE_PERSISTENCE_FAILED"
    assert "already stored by persistence member 1" in exc.value.message
    assert server.request("sessionPersistence/status")["pendingEvents"] == 1
    server.request("sessionPersistence/mount", {"uri": homes["sqlite"]})
    assert ids(server) == ["claude-demo"]  # live only: the store was never written
    record = server.request("sessionQuery/listSessions")[0]
    assert record["live"] is True and record["persisted"] is False


def make_homes(home: pathlib.Path) -> None:
    shutil.copytree(SPEC / "claude", home / ".claude")
    shutil.copytree(SPEC / "codex", home / ".codex")
    (home / ".dsh" / "sessions").mkdir(parents=True)


def test_auto_is_the_default_and_finds_the_homes_that_exist(tmp_path):
    env = private_env(tmp_path)
    make_homes(pathlib.Path(env["HOME"]))
    home = env["HOME"]
    with StdioClient([], env=env, initialization_options={"index": ":memory:"}) as client:
        status = client.request("sessionPersistence/status")
        embedded = f"sqlite:{tmp_path}/state/dsh-query/sessions.db"
        assert status["uri"] == "auto" and status["writable"] is True
        assert status["members"] == [
            {"uri": embedded, "writable": True},
            {"uri": f"jsonl:{home}/.dsh/sessions?readOnly=true", "writable": False},
            {"uri": f"claude:{home}/.claude", "writable": False},
            {"uri": f"codex:{home}/.codex", "writable": False},
        ]
        assert ids(client) == sorted([*CLAUDE_IDS, CODEX_ID])


def test_auto_honours_the_agents_variables_and_resolves_at_each_mount(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    env = private_env(
        tmp_path,
        CLAUDE_CONFIG_DIR=str(elsewhere / "claude"),
        CODEX_HOME=str(elsewhere / "codex"),
        DSH_HOME=str(elsewhere / "dsh"),
    )
    make_homes(pathlib.Path(env["HOME"]))  # ignored: the variables point elsewhere
    with StdioClient(
        ["--persistence", "auto"], env=env, initialization_options={"index": ":memory:"}
    ) as client:
        assert [
            m["uri"].split(":")[0] for m in client.request("sessionPersistence/status")["members"]
        ] == ["sqlite"]
        assert ids(client) == []
        shutil.copytree(SPEC / "claude", elsewhere / "claude")  # a home created later...
        mounted = client.request(
            "sessionPersistence/mount", {"uri": "auto"}
        )  # ...joins at the next mount
        assert mounted["uri"] == "auto"
        assert [m["uri"] for m in mounted["members"]][1:] == [f"claude:{elsewhere}/claude"]
        assert ids(client) == sorted(CLAUDE_IDS)


def test_serve_takes_persistence_repeated(tmp_path, homes):
    env = private_env(tmp_path)
    with StdioClient(
        ["--persistence", homes["claude"], "--persistence", homes["codex"]],
        env=env,
        initialization_options={"index": ":memory:"},
    ) as client:
        status = client.request("sessionPersistence/status")
        assert status["uri"] == [homes["claude"], homes["codex"]] and status["writable"] is False
        assert ids(client) == sorted([*CLAUDE_IDS, CODEX_ID])


def test_the_default_index_hashes_the_persistence_text(tmp_path, homes):
    from dsh_query_server.config import default_index, persistence_text

    uris = [homes["claude"], homes["codex"]]
    assert persistence_text(uris) == json.dumps(uris, separators=(",", ":"))
    assert default_index(uris) != default_index(uris[0]) != default_index("auto")
    env = private_env(tmp_path)
    with StdioClient(["--persistence", homes["claude"], "--persistence", homes["codex"]], env=env):
        pass
    index_dir = tmp_path / "cache" / "dsh-query"
    assert [p.name for p in index_dir.glob("index-*.sqlite")] == [
        os.path.basename(
            default_index(uris).replace(os.environ["XDG_CACHE_HOME"], str(tmp_path / "cache"))
        )
    ]


def changed_ids(client: StdioClient) -> list[str]:
    return [
        sid
        for n in client.notifications
        if n["method"] == "sessionQuery/didChange"
        for sid in n["params"].get("sessionIds", [])
    ]


def test_a_growing_transcript_notifies_its_id_within_two_seconds(tmp_path, homes):
    import time

    transcript = (
        pathlib.Path(homes["claude"].partition(":")[2]) / "projects" / "-w" / "claude-demo.jsonl"
    )
    env = private_env(tmp_path)
    with StdioClient(
        ["--persistence", homes["sqlite"], "--persistence", homes["claude"]],
        env=env,
        initialization_options={"index": ":memory:"},
    ) as client:
        assert ids(client) == sorted(CLAUDE_IDS)
        time.sleep(1.5)  # the poll has its baseline; nothing changed, so nothing is sent
        client.request("sessionPersistence/status")
        assert changed_ids(client) == []
        last = json.loads(transcript.read_bytes().splitlines()[-1])
        grown = {
            **last,
            "uuid": "0000aaaa-0000-4000-8000-00000000beef",
            "parentUuid": last.get("uuid"),
        }
        with transcript.open("a", encoding="utf-8") as f:
            f.write(json.dumps(grown) + "\n")
        appended = time.monotonic()
        while "claude-demo" not in changed_ids(client) and time.monotonic() - appended < 2.0:
            client.request("sessionPersistence/status")  # notifications are read with answers
            time.sleep(0.05)
        assert "claude-demo" in changed_ids(client), client.notifications
        assert "claude-demo/agent-ab12" not in changed_ids(client)  # only what grew
