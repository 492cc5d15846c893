"""opencode: the database as another program's live file (importers.md §8.6). A real SQLite writer
connection plays OpenCode: WAL mode as OpenCode opens it, committing while we read."""

from __future__ import annotations

import copy
import json
import os
import sqlite3

import pytest

from dsh_query_server.persistence.opencode.backend import OpenCodeBackend, OpenCodeError
from dsh_query_server.persistence.opencode.database import Database
from tests.import_helpers import checked
from tests.persistence.opencode.opencode_helpers import (
    SCHEMA,
    connect,
    load,
    snapshot_files,
    surface_ids,
    write_db,
    write_legacy,
)

BASIC = "ses_4a1f0c2e7ffeAbCdEfGhIjKlMn"
PRUNE = "ses_4a1e0c2e7ffePrune0000001"
NOW_MS = 1_767_300_000_000  # well after every fixture row was written
NOW_NS = NOW_MS * 1_000_000


def home_with(tmp_path, *names: str):
    home = tmp_path / "opencode"
    write_db(home, [s for n in names for s in load(n)["sessions"]])
    return home


def revisions(backend: OpenCodeBackend) -> dict[str, str]:
    return {s.header.to_value()["id"]: s.revision for s in backend.list_snapshots()}


def read_everything(backend: OpenCodeBackend) -> None:
    for snap in backend.list_snapshots():
        sid = snap.header.to_value()["id"]
        ins = backend.inspect(sid)
        checked(ins, sid)
        backend.inspect_window(sid, 1, 3)


def test_reading_never_writes_the_database_or_the_legacy_files(tmp_path):
    home = home_with(tmp_path, "basic", "compaction")
    write_legacy(home, load("prune")["sessions"])
    before = snapshot_files(home)
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    read_everything(backend)
    backend.close()
    assert snapshot_files(home) == before
    # a mode=ro reader of a WAL database may only add SQLite's own coordination files
    extra = {p.name for p in home.iterdir()} - {"opencode.db", "storage"}
    assert extra <= {"opencode.db-wal", "opencode.db-shm"}
    assert not (home / "opencode.db-wal").exists() or (home / "opencode.db-wal").stat().st_size == 0


def test_reading_beside_a_running_writer_leaves_its_wal_alone(tmp_path):
    home = home_with(tmp_path, "basic")
    writer = connect(home / "opencode.db")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        writer.execute("UPDATE session SET title = 'renamed', time_updated = time_updated + 1")
        wal = (home / "opencode.db-wal").read_bytes()
        db = snapshot_files(home)
        backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
        read_everything(backend)
        title = [e for e in backend.inspect(BASIC).events if e.type == "session/title"][-1]
        assert title.data()["title"] == "renamed"  # committed in the WAL, not yet checkpointed
        assert (home / "opencode.db-wal").read_bytes() == wal
        assert snapshot_files(home) == db
        backend.close()
    finally:
        writer.close()


def test_a_concurrent_writers_change_is_seen_and_changes_only_its_sessions_revision(tmp_path):
    home = home_with(tmp_path, "basic", "prune")
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    writer = connect(home / "opencode.db")
    try:
        first = revisions(backend)
        assert revisions(backend) == first  # nothing committed: the same proof
        # OpenCode streams a new part into the prune session's last message
        writer.execute(
            "INSERT INTO part VALUES ('prt_e000000006z', 'msg_e000000006', ?, 1, 1, ?)",
            (PRUNE, json.dumps({"type": "text", "text": "One more thing."})),
        )
        second = revisions(backend)
        assert second[BASIC] == first[BASIC] and second[PRUNE] != first[PRUNE]
        ins = backend.inspect(PRUNE)
        texts = [
            e.data()["message"]["content"] for e in ins.events if e.type == "assistant/message"
        ]
        assert {"type": "text", "text": "One more thing."} in texts[-1]
        # a prune rewrites a part in place: the row count and ids stay, time_updated moves
        (data,) = writer.execute(
            "SELECT data FROM part WHERE id = 'prt_b5e0f3d1c006Uu7Vv8Ww9Xx0Yy'"
        ).fetchone()
        part = json.loads(data)
        part["state"]["time"]["compacted"] = 1767225650000
        writer.execute(
            "UPDATE part SET data = ?, time_updated = time_updated + 10"
            " WHERE id = 'prt_b5e0f3d1c006Uu7Vv8Ww9Xx0Yy'",
            (json.dumps(part),),
        )
        third = revisions(backend)
        assert third[BASIC] != second[BASIC] and third[PRUNE] == second[PRUNE]
        results = [e for e in backend.inspect(BASIC).events if e.type == "tool/result"]
        assert results[-1].data()["message"]["content"][0]["content"][0]["text"] == (
            "[Old tool result content cleared]"
        )
    finally:
        writer.close()
        backend.close()


def test_a_change_in_the_same_millisecond_as_the_last_update_is_still_seen(tmp_path):
    """Rows updated within 2 s of the read cannot prove themselves by time_updated (a second
    write in the same millisecond keeps it): their revision carries the database generation."""
    home = home_with(tmp_path, "basic", "prune")
    writer = connect(home / "opencode.db")
    writer.execute("UPDATE session SET time_updated = ? WHERE id = ?", (NOW_MS - 5, PRUNE))
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    try:
        first = revisions(backend)
        assert ";young:" in first[PRUNE] and ";young:" not in first[BASIC]
        assert revisions(backend) == first
        writer.execute(  # same count, same ids, same time_updated: only the data differs
            "UPDATE message SET data = json_set(data, '$.agent', 'plan')"
            " WHERE id = 'msg_e000000005'"
        )
        second = revisions(backend)
        assert second[PRUNE] != first[PRUNE] and second[BASIC] == first[BASIC]
    finally:
        writer.close()
        backend.close()


def test_no_read_transaction_outlives_a_call(tmp_path):
    home = home_with(tmp_path, "basic", "compaction")
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    writer = connect(home / "opencode.db")
    try:
        writer.execute("UPDATE session SET time_updated = time_updated + 1")
        read_everything(backend)
        # a TRUNCATE checkpoint waits for no reader only when no reader holds a snapshot
        busy, _, _ = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
        assert (home / "opencode.db-wal").stat().st_size == 0
    finally:
        writer.close()
        backend.close()


def _locked_home(tmp_path):
    """A store in rollback-journal mode (OpenCode's fallback where WAL is unsupported) whose
    writer holds an exclusive lock, so a reader gets SQLITE_BUSY."""
    home = tmp_path / "opencode"
    home.mkdir()
    conn = sqlite3.connect(home / "opencode.db", isolation_level=None)
    conn.executescript(SCHEMA)
    conn.close()
    write_db_delete = sqlite3.connect(home / "opencode.db", isolation_level=None)
    write_db_delete.execute("PRAGMA journal_mode = DELETE")
    write_db_delete.close()
    write_db(home, load("basic")["sessions"])
    conn = sqlite3.connect(home / "opencode.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("BEGIN EXCLUSIVE")
    return home, conn


def test_a_busy_database_is_retried_and_read_once_the_writer_commits(tmp_path):
    home, writer = _locked_home(tmp_path)
    attempts: list[int] = []

    def release(attempt: int) -> None:
        attempts.append(attempt)
        writer.execute("COMMIT")

    db = Database(str(home / "opencode.db"), busy_timeout=0.01, on_busy=release)
    backend = OpenCodeBackend(str(home), f"opencode:{home}", database=db)
    try:
        assert [h.to_value()["id"] for h in backend.list()] == [BASIC]
        assert attempts == [0]
    finally:
        writer.close()
        backend.close()


def test_a_database_that_stays_busy_fails_with_a_clear_error(tmp_path):
    home, writer = _locked_home(tmp_path)
    attempts: list[int] = []
    db = Database(str(home / "opencode.db"), busy_timeout=0.01, on_busy=attempts.append)
    backend = OpenCodeBackend(str(home), f"opencode:{home}", database=db)
    try:
        with pytest.raises(OpenCodeError, match="stayed busy"):
            backend.list()
        assert attempts == [0, 1]  # three attempts in all
    finally:
        writer.close()
        backend.close()


def test_a_replaced_database_file_is_read_afresh(tmp_path):
    home = home_with(tmp_path, "basic")
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    assert list(revisions(backend)) == [BASIC]
    other = tmp_path / "other"
    write_db(other, load("prune")["sessions"])
    os.replace(other / "opencode.db", home / "opencode.db")
    assert list(revisions(backend)) == [PRUNE]
    assert surface_ids(backend.inspect(PRUNE))[0] == "msg_e000000001"
    backend.close()


def test_an_unreadable_database_is_skipped_with_one_line_and_legacy_still_lists(tmp_path, capsys):
    home = tmp_path / "opencode"
    write_legacy(home, load("prune")["sessions"])
    (home / "opencode.db").write_bytes(b"this is not a database" * 100)
    backend = OpenCodeBackend(str(home), f"opencode:{home}")
    assert [h.to_value()["id"] for h in backend.list()] == [PRUNE]
    assert [h.to_value()["id"] for h in backend.list()] == [PRUNE]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "skipping opencode database" in err[0]
    checked(backend.inspect(PRUNE), PRUNE)
    backend.close()


def test_a_database_without_opencodes_tables_lists_nothing(tmp_path, capsys):
    home = tmp_path / "opencode"
    home.mkdir()
    conn = sqlite3.connect(home / "opencode.db")
    conn.execute("CREATE TABLE session (id text)")
    conn.close()
    backend = OpenCodeBackend(str(home), f"opencode:{home}")
    assert backend.list() == []
    assert "lacks time_created" in capsys.readouterr().err
    backend.close()


def test_a_window_follows_the_rows_it_was_cut_from(tmp_path):
    home = home_with(tmp_path, "basic")
    backend = OpenCodeBackend(str(home), f"opencode:{home}", clock=lambda: NOW_NS)
    whole = backend.inspect(BASIC)
    window = backend.inspect_window(BASIC, 2, 5)
    assert window.start == 2 and window.length == len(whole.events)
    assert [e.to_value() for e in window.events] == [e.to_value() for e in whole.events[2:6]]
    assert window.title == len(whole.events) - 1
    writer = connect(home / "opencode.db")
    writer.execute(
        "UPDATE part SET data = json_set(data, '$.text', 'changed'), time_updated = ?"
        " WHERE id = 'prt_b5e0f3d1c002Aa1Bb2Cc3Dd4Ee'",
        (NOW_MS - 60_000,),  # OpenCode stamps Date.now() (drizzle's $onUpdate)
    )
    writer.close()
    changed = backend.inspect_window(BASIC, 2, 2)
    assert changed.events[0].data()["content"] == [{"type": "text", "text": "changed"}]
    backend.close()


def test_legacy_revisions_follow_every_file(tmp_path):
    home = tmp_path / "opencode"
    sessions = copy.deepcopy(load("basic")["sessions"])
    write_legacy(home, sessions)
    backend = OpenCodeBackend(str(home), f"opencode:{home}")
    first = revisions(backend)
    assert first[BASIC].startswith("opencode:legacy:") and revisions(backend) == first
    part = next((home / "storage/part").rglob("prt_b5e0f3d1c009*.json"))
    value = json.loads(part.read_text())
    value["text"] = "Two files, really."
    part.write_text(json.dumps(value))
    os.utime(part, ns=(1, 1))  # even an mtime set back: size and ctime moved
    assert revisions(backend)[BASIC] != first[BASIC]
