"""Transcripts a foreign listing leaves out, named by ``sessionPersistence/status`` for every
importer (importers.md §3.1 [ours], semantics.md §6.5): a real server on stdio mounts a Gemini
CLI, Copilot CLI, Qwen Code or OpenCode home holding a healthy session, a garbled file, an empty
one (being created: not named) and, where the agent keeps copies, a damaged copy of a session
that lists anyway (not named: that id reads)."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.opencode.backend import OpenCodeBackend
from tests.import_helpers import FIXTURES, SPEC, isolated_env
from tests.persistence.opencode.opencode_helpers import load, write_db, write_legacy
from tests.search_helpers import StdioServer

pytestmark = pytest.mark.wire

CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"
NO_HEADER = "no header record in its first MiB"


def garble(src: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """The file's bytes reversed: no line of it is a record."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(bytes(reversed(src.read_bytes())))
    return dest


def statused(tmp_path, uri: str) -> tuple[list[str], list[dict], StdioServer]:
    server = StdioServer(["--persistence", "none"], isolated_env(tmp_path), str(tmp_path))
    server.call("sessionPersistence/mount", {"uri": uri})
    listed = [s["header"]["id"] for s in server.call("sessionQuery/listSessions", {})]
    status = server.call("sessionPersistence/status", {})
    unreadable = status.get("unreadable", [])
    assert status.get("unreadableCount", 0) == len(unreadable)
    return listed, unreadable, server


def entry(sid: str, home: pathlib.Path, path: pathlib.Path, reason: str, what: str) -> dict:
    rel = path.relative_to(home)
    return {
        "sessionId": sid,
        "code": CORRUPT,
        "message": f'{what} "{rel}" is unreadable: {reason} ({path})',
        "path": str(path),
    }


def test_gemini_names_its_garbled_session_file(tmp_path):
    home = pathlib.Path(shutil.copytree(FIXTURES / "gemini/spec/.gemini", tmp_path / ".gemini"))
    chats = home / "tmp/w/chats"
    main = chats / "session-2026-01-01T00-00-0b6e4f1c.jsonl"
    bad = garble(main, chats / "session-2026-01-03T00-00-deadbeef.jsonl")
    (chats / "session-2026-01-03T00-01-0e0e0e0e.jsonl").write_bytes(b"")
    # a damaged older file of a listed session: its name gives that id, which reads
    garble(main, chats / "session-2025-12-31T00-00-0b6e4f1c.jsonl")
    listed, unreadable, server = statused(tmp_path, f"gemini:{home}")
    try:
        assert "0b6e4f1c-5a7d-4d1e-9c8b-2f3a4b5c6d7e" in listed
        assert unreadable == [entry("deadbeef", home, bad, NO_HEADER, "foreign transcript")]
    finally:
        server.close()


def test_copilot_names_its_garbled_events_log(tmp_path):
    home = tmp_path / "copilot"
    shutil.copytree(FIXTURES / "copilot/worked-example/session-state", home / "session-state")
    good = next((home / "session-state").iterdir()) / "events.jsonl"
    sid = "0d0d0d0d-0000-4000-8000-000000000000"
    bad = garble(good, home / "session-state" / sid / "events.jsonl")
    (home / "session-state/0e0e0e0e-0000-4000-8000-000000000000").mkdir()
    (home / "session-state/0e0e0e0e-0000-4000-8000-000000000000/events.jsonl").write_bytes(b"")
    # a log whose session.start names another session is left out too (importers.md §9.2)
    other = "0f0f0f0f-0000-4000-8000-000000000000"
    (home / "session-state" / other).mkdir()
    shutil.copy(good, home / "session-state" / other / "events.jsonl")
    listed, unreadable, server = statused(tmp_path, f"copilot:{home}")
    try:
        assert good.parent.name in listed and sid not in listed and other not in listed
        mismatched = home / "session-state" / other / "events.jsonl"
        assert sorted(unreadable, key=lambda u: u["sessionId"]) == [
            entry(sid, home, bad, NO_HEADER, "foreign transcript"),
            entry(other, home, mismatched, NO_HEADER, "foreign transcript"),
        ]
    finally:
        server.close()


def test_qwen_names_its_garbled_chat_but_not_a_damaged_archived_copy(tmp_path):
    home = pathlib.Path(shutil.copytree(SPEC / "qwen", tmp_path / "qwen"))
    chats = home / "projects/-w/chats"
    good = chats / "0a0a0a0a-0000-4000-8000-000000000001.jsonl"
    sid = "0d0d0d0d-0000-4000-8000-000000000000"
    bad = garble(good, chats / f"{sid}.jsonl")
    (chats / "0e0e0e0e-0000-4000-8000-000000000000.jsonl").write_bytes(b"")
    garble(good, chats / "archive" / good.name)  # the active chat of that id wins
    listed, unreadable, server = statused(tmp_path, f"qwen:{home}")
    try:
        assert good.stem in listed and sid not in listed
        assert unreadable == [entry(sid, home, bad, NO_HEADER, "foreign transcript")]
    finally:
        server.close()


def test_opencode_names_its_damaged_legacy_session_file(tmp_path):
    home = tmp_path / "opencode"
    write_db(home, load("basic")["sessions"])
    write_legacy(home, load("revert")["sessions"])
    project = home / "storage/session/global"
    project.mkdir(parents=True, exist_ok=True)
    bad = project / "ses_0000000000000Damaged00001.json"
    bad.write_text("{not json", encoding="utf-8")
    (project / "ses_0000000000000Empty0000001.json").write_bytes(b"")
    # a damaged legacy copy of a database session: the database's copy is read, so not named
    in_db = load("basic")["sessions"][0]["session"]["id"]
    (project / f"{in_db}.json").write_text("[]", encoding="utf-8")
    listed, unreadable, server = statused(tmp_path, f"opencode:{home}")
    try:
        assert in_db in listed and "ses_0000000000000Damaged00001" not in listed
        sid = "ses_0000000000000Damaged00001"
        reason = "it holds no JSON object"
        assert unreadable == [entry(sid, home, bad, reason, "opencode session file")]
        # the backend's own inspect of the id says what status says (the wire answers
        # SESSION_NOT_FOUND for an id no listing has, whatever the backend)
        backend = OpenCodeBackend(str(home), f"opencode:{home}")
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            backend.inspect(sid)
        assert (
            str(info.value)
            == f'opencode session file "{bad.relative_to(home)}" is unreadable: {reason}'
        )
    finally:
        server.close()
