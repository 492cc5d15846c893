"""Composite bindings and the member list of ``auto`` (importers.md §4.1, §4.2), over real
members: an SQLite store, a claude: home and a codex: home."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header, make_event
from dsh_query_server.persistence.contract.errors import SessionPersistenceReadOnlyError
from dsh_query_server.persistence.mount.composite import (
    CompositeBackend,
    CompositeError,
    open_composite,
)
from dsh_query_server.persistence.mount.uri import open_backend
from dsh_query_server.resolve import auto_uris
from tests.import_helpers import SPEC, jl, write_home

F = "019b7e26-5500-7000-8000-0000000000f1"


@pytest.fixture
def homes(tmp_path):
    claude = shutil.copytree(SPEC / "claude", tmp_path / "claude")
    codex = shutil.copytree(SPEC / "codex", tmp_path / "codex")
    return [f"sqlite:{tmp_path}/s.db", f"claude:{claude}", f"codex:{codex}"]


def test_members_list_in_order_with_prefixed_revisions(homes):
    composite = open_composite(homes, "auto", open_backend)
    try:
        assert composite.writable
        snaps = composite.list_snapshots()
        assert [s.header.id for s in snaps] == ["claude-demo", "claude-demo/agent-ab12", F]
        assert [s.revision.split("/", 1)[0] for s in snaps] == ["1", "1", "2"]
        assert snaps[2].revision.split("/", 1)[1].startswith("codex:")
        assert composite.inspect(F).meta.id == F
        assert composite.inspect("claude-demo").events[29].type == "user/message"
        with pytest.raises(CompositeError, match='session "x" not found'):
            composite.inspect("x")
        composite.create(Header.from_value({"version": 0, "id": "mine", "createdAt": 1}))
        composite.append("mine", [make_event("turn/start", 0, 1, {"turn": 1})])
        assert composite.stored_count("mine") == 1
        assert "mine" in [h.id for h in composite.list()]
        assert composite.inspect("mine").meta.id == "mine"
        with pytest.raises(
            CompositeError, match='"claude-demo" is already stored by persistence member 1'
        ):
            composite.create(Header.from_value({"version": 0, "id": "claude-demo", "createdAt": 1}))
    finally:
        composite.close()


def test_an_id_listed_twice_fails_the_listing(homes, tmp_path):
    other = shutil.copytree(SPEC / "claude", tmp_path / "claude2")
    composite = open_composite([homes[1], f"claude:{other}"], "x", open_backend)
    with pytest.raises(
        CompositeError, match='persistence members 0 and 1 both list session "claude-demo"'
    ):
        composite.list()


def test_the_point_lookup_answers_as_the_listing_and_names_the_owner(homes, tmp_path):
    composite = open_composite(homes, "auto", open_backend)
    try:
        composite.create(Header.from_value({"version": 0, "id": "mine", "createdAt": 1}))
        composite.append("mine", [make_event("turn/start", 0, 1, {"turn": 1})])
        reference = open_composite(homes, "auto", open_backend)
        listed = {h.id: h.raw for h in reference.list()}
        reference.close()
        for sid in [*listed, "absent"]:
            found = composite.list_one(sid)
            assert (None if found is None else found.raw) == listed.get(sid)
        # The owner is known from the lookup: the window read asks no member for a listing.
        members = composite.members
        for member in members:
            member.list = None  # type: ignore[method-assign]  # a listing would fail now
        assert composite.inspect_window(F, 0, 0).meta.id == F
    finally:
        composite.close()
    other = shutil.copytree(SPEC / "claude", tmp_path / "claude2")
    twice = open_composite([homes[1], f"claude:{other}"], "x", open_backend)
    with pytest.raises(
        CompositeError, match='persistence members 0 and 1 both list session "claude-demo"'
    ):
        twice.list_one("claude-demo")
    assert twice.list_one(F) is None


def test_read_only_composite_refuses_writes_and_mounting_is_atomic(homes, tmp_path):
    composite = open_composite(homes[1:], "x", open_backend)
    assert not composite.writable and composite.stored_count("claude-demo") is None
    with pytest.raises(SessionPersistenceReadOnlyError):
        composite.create(Header.from_value({"version": 0, "id": "n", "createdAt": 1}))
    with pytest.raises(SessionPersistenceReadOnlyError):
        composite.append("claude-demo", [])
    (tmp_path / "plain").write_text("x")
    closed = []

    def opener(uri):
        backend = open_backend(uri)
        original = backend.close
        backend.close = lambda: (closed.append(uri), original())[1]
        return backend

    with pytest.raises(QueryError) as info:
        open_composite([homes[1], f"codex:{tmp_path}/plain"], "x", opener)
    assert info.value.code == "SESSION_QUERY_PERSISTENCE_FAILED" and closed == [homes[1]]
    with pytest.raises(ValueError):
        CompositeBackend([], "x")


def test_auto_finds_the_homes_that_exist(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    assert auto_uris("sqlite:/s.db", env) == ["sqlite:/s.db"]
    write_home(
        home,
        {
            ".dsh/sessions/.keep": b"",
            ".claude/projects/-w/s.jsonl": jl({"x": 1}),
            ".claude-vscode/projects/.keep": b"",
            ".codex/archived_sessions/.keep": b"",
        },
    )
    assert auto_uris("sqlite:/s.db", env) == [
        "sqlite:/s.db",
        f"jsonl:{home}/.dsh/sessions?readOnly=true",
        f"claude:{home}/.claude",
        f"claude:{home}/.claude-vscode",
        f"codex:{home}/.codex",
    ]
    os.symlink(home / ".claude", tmp_path / "alias")
    env.update(
        CLAUDE_CONFIG_DIR=str(tmp_path / "alias"),
        CODEX_HOME=str(tmp_path / "none"),
        DSH_HOME=str(tmp_path / "none"),
    )
    assert auto_uris("sqlite:/s.db", env) == [
        "sqlite:/s.db",
        f"claude:{tmp_path}/alias",
        f"claude:{home}/.claude-vscode",
    ]
    for uri in auto_uris("sqlite:/s.db", env)[1:]:
        open_backend(uri).close()


def test_persistence_values(homes, tmp_path):
    from dsh_query_server.persistence.mount.composite import open_persistence, persistence_members

    env = {"HOME": str(tmp_path / "nobody")}
    assert persistence_members("auto", homes[0], env) == [homes[0]]
    single = open_persistence(homes[1], homes[0], env)
    assert not isinstance(single, CompositeBackend) and single.uri == homes[1]
    both = open_persistence(homes[1:], homes[0], env)
    assert isinstance(both, CompositeBackend) and [m.uri for m in both.members] == homes[1:]
    assert both.uri == json.dumps(homes[1:], separators=(",", ":"))
    auto = open_persistence("auto", homes[0], env)
    assert auto.uri == "auto" and auto.writable
    for bad in (
        [],
        ["auto"],
        [homes[1], homes[1]],
        [1],
        list(homes) * 3,
        "nope:x",
        [f"claude:{tmp_path}?readOnly=false"],
    ):
        with pytest.raises(QueryError) as info:
            persistence_members(bad, homes[0], env)
        assert info.value.code == "SESSION_QUERY_INVALID_CONFIG", bad
