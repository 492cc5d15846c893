"""persistence.md §5: the ``sqlite:`` backend."""

from __future__ import annotations

import itertools
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.contract.errors import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
)
from dsh_query_server.persistence.logical.closers import OUTCOME_UNKNOWN_TEXT
from dsh_query_server.persistence.sqlite import (
    MalformedProvenance,
    SessionDatabaseRefused,
    SqliteBackend,
    decode_provenance,
    encode_provenance,
    stored_data,
)
from dsh_query_server.persistence.sqlite import backend as sqlite_backend
from dsh_query_server.persistence.sqlite import codec as sqlite_codec
from tests.builders import EPOCH_MS
from tests.builders import header as build_header

MAX_SAFE = 2**53 - 1

# The canonical statements exactly as persistence.md §5.4 prints them.
SPEC_SCHEMA = [
    (
        "table",
        "events",
        "events",
        "CREATE TABLE events ( session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        " seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, data ANY NOT NULL,"
        " source_event_seqs ANY, surface_op TEXT, ignorable INTEGER CHECK (ignorable IS NULL OR"
        " ignorable IN (0, 1)), PRIMARY KEY (session_id, seq) ) STRICT",
    ),
    (
        "table",
        "persistence_state",
        "persistence_state",
        "CREATE TABLE persistence_state ( singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
        " store_id TEXT NOT NULL ) STRICT",
    ),
    (
        "table",
        "sessions",
        "sessions",
        "CREATE TABLE sessions ( id TEXT PRIMARY KEY, version INTEGER NOT NULL, created_at INTEGER"
        " NOT NULL, cwd TEXT, parent_session TEXT, seed_length INTEGER, origin TEXT,"
        " delegation_depth INTEGER, agent_preset TEXT, incarnation TEXT NOT NULL, revision INTEGER"
        " NOT NULL ) STRICT",
    ),
]

# ---------------------------------------------------------------------------------------------
# builders

# Headers created at EPOCH_MS (the stored createdAt some assertions read back).
header = partial(build_header, created=EPOCH_MS)


def user(seq: int, text: str = "hi", time: int | None = None) -> Event:
    data = {
        "id": f"u{seq}",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }
    return make_event("user/message", seq, seq if time is None else time, data, surface_op="append")


def turn_start(seq: int, turn: int = 1) -> Event:
    return make_event("turn/start", seq, seq, {"turn": turn})


def turn_end(seq: int, turn: int = 1) -> Event:
    return make_event("turn/end", seq, seq, {"turn": turn, "reason": {"kind": "completed"}})


def chunk(seq: int, text: str = "x", *, time: int | None = None) -> Event:
    data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}
    return make_event("assistant/chunk", seq, seq if time is None else time, data)


def opaque(seq: int, data: Any) -> Event:
    return make_event("plugin/blob", seq, seq, data)


def values(events: list[Event]) -> list[Any]:
    return [event.to_value() for event in events]


def two_turns() -> list[Event]:
    """turn/start@0 U@1 turn/end@2 turn/start@3 U@4."""
    return [turn_start(0), user(1), turn_end(2), turn_start(3, 2), user(4)]


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "sessions.db"


def stored(path: Path, events: list[Event], session_id: str = "s", **kw: Any) -> SqliteBackend:
    backend = SqliteBackend(str(path), **kw)
    backend.create(header(session_id))
    backend.append(session_id, events)
    return backend


def tamper(path: Path, sql: str, *params: Any) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(sql, params)
    conn.close()


def physical(path: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT seq, type, typeof(data), data, ignorable FROM events ORDER BY seq"
    ).fetchall()
    conn.close()
    return rows


def data_text(value: str | bytes) -> str:
    if isinstance(value, str):
        return value
    return zstandard.ZstdDecompressor().decompressobj().decompress(value).decode()


def private_db(path: Path, *statements: str) -> None:
    """A database file that passes the file-safety checks, prepared with ``statements``."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    path.chmod(0o600)


def refusal(path: Path) -> str:
    with pytest.raises(SessionDatabaseRefused) as info:
        SqliteBackend(str(path)).list()
    assert not isinstance(info.value, SessionPersistenceCorruptionError)
    return str(info.value)


# ---------------------------------------------------------------------------------------------
# schema, opening and refusals (§5.2, §5.4)


def test_fresh_database_has_the_canonical_schema_and_settings(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)]).close()
    conn = sqlite3.connect(path)
    objects = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'"
        " ORDER BY type, name"
    ).fetchall()
    assert [(t, n, tb, " ".join(sql.split())) for t, n, tb, sql in objects] == SPEC_SCHEMA
    assert conn.execute("PRAGMA user_version").fetchone() == (17,)
    assert conn.execute("PRAGMA application_id").fetchone() == (1146308688,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    (store_id,) = conn.execute("SELECT store_id FROM persistence_state").fetchone()
    conn.close()
    assert len(store_id) == 36
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_nothing_is_created_before_the_first_write(tmp_path: Path) -> None:
    """Issue 25: mounting and reading an absent store create nothing (no directory, database,
    -wal or -shm); the first append creates them, private; a `create` alone writes nothing."""
    path = db_path(tmp_path)
    backend = SqliteBackend(str(path))
    assert backend.writable
    assert backend.list() == [] and backend.list_snapshots() == []
    assert backend.stored_count("s") is None
    with pytest.raises(LookupError):
        backend.inspect("s")
    with pytest.raises(LookupError):
        backend.inspect_window("s", 0, 1)
    backend.create(header("s"))
    assert list(tmp_path.iterdir()) == []
    backend.append("s", [turn_start(0)])
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert backend.stored_count("s") == 1
    backend.close()


def test_an_empty_file_is_read_as_no_sessions_and_begun_by_the_first_write(
    tmp_path: Path,
) -> None:
    path = db_path(tmp_path)
    private_db(path)  # an empty file
    backend = SqliteBackend(str(path))
    assert backend.list() == []
    assert sorted(p.name for p in path.parent.iterdir()) == ["sessions.db"]
    assert path.stat().st_size == 0
    backend.create(header("s"))
    backend.append("s", [turn_start(0)])
    assert SqliteBackend(str(path), read_only=True).stored_count("s") == 1
    backend.close()


def test_a_store_made_after_mount_is_read(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    reader = SqliteBackend(str(path))
    assert reader.list() == []
    stored(path, [turn_start(0)]).close()
    assert [h.id for h in reader.list()] == ["s"]
    reader.close()


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_a_file_that_is_no_database_is_refused_as_such(tmp_path: Path, mode: int) -> None:
    """Issue 25: the reason is the content, whatever the permissions say."""
    path = tmp_path / "d" / "notes.txt"
    path.parent.mkdir(mode=0o700)
    path.write_text("not a database\n")
    path.chmod(mode)
    for read_only in (False, True):
        with pytest.raises(SessionDatabaseRefused) as info:
            SqliteBackend(str(path), read_only=read_only)
        assert str(info.value) == f'session database "{path}" is not a SQLite database'


def test_journal_mode_is_configurable(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)], journal_mode="delete").close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_journal_mode_change_retries_while_busy(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    holder = stored(path, [turn_start(0)])  # its open WAL connection blocks leaving WAL
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        SqliteBackend(str(path), journal_mode="delete", busy_timeout_ms=100).list()
    threading.Timer(0.2, holder.close).start()
    assert [h.id for h in SqliteBackend(str(path), journal_mode="delete").list()] == ["s"]


def test_invalid_mount_parameters(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SqliteBackend(str(db_path(tmp_path)), journal_mode="memory")
    with pytest.raises(ValueError):
        SqliteBackend(str(db_path(tmp_path)), busy_timeout_ms=-1)


def test_refuses_a_foreign_application_id(tmp_path: Path) -> None:
    path = tmp_path / "d" / "other.db"
    private_db(path, "PRAGMA application_id = 1146308689", "PRAGMA user_version = 17")
    assert refusal(path) == (
        f'session database at "{path}" has application id 1146308689, expected 1146308688'
    )


def test_refuses_the_search_index_database(tmp_path: Path) -> None:
    path = tmp_path / "d" / "index.db"
    private_db(path, "PRAGMA application_id = 1146308689", "PRAGMA user_version = 8")
    assert refusal(path) == (
        f'session database at "{path}" has schema version 8, incompatible with this build (17)'
    )


@pytest.mark.parametrize("statement", ["CREATE TABLE t (x)", "PRAGMA application_id = 7"])
def test_refuses_an_unversioned_database(tmp_path: Path, statement: str) -> None:
    path = tmp_path / "d" / "unversioned.db"
    private_db(path, statement)
    assert refusal(path) == (
        f'session database at "{path}" has an unversioned schema or application identity'
    )
    conn = sqlite3.connect(path)  # a refused file is left alone
    assert conn.execute("PRAGMA user_version").fetchone() == (0,)
    conn.close()


def test_refuses_a_tampered_schema(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)]).close()
    tamper(path, "CREATE INDEX extra ON events (type)")
    assert refusal(path) == (
        f'session database at "{path}" does not contain the required schema objects'
    )


@pytest.mark.parametrize(
    "sql", ["DELETE FROM persistence_state", "UPDATE persistence_state SET store_id = 'not-a-uuid'"]
)
def test_refuses_a_missing_store_identity(tmp_path: Path, sql: str) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)]).close()
    tamper(path, sql)
    assert refusal(path) == f'session database at "{path}" has no valid store identity'


def test_every_mutation_rechecks_the_schema(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = stored(path, [turn_start(0)])
    tamper(path, "CREATE INDEX extra ON events (type)")
    with pytest.raises(SessionDatabaseRefused, match="does not contain the required schema"):
        backend.append("s", [user(1)])
    tamper(path, "DROP INDEX extra")
    tamper(path, "PRAGMA user_version = 18")
    with pytest.raises(SessionDatabaseRefused, match=r"has schema version 18, incompatible"):
        backend.append("s", [user(1)])
    tamper(path, "PRAGMA user_version = 17")
    tamper(path, "PRAGMA application_id = 5")
    with pytest.raises(SessionDatabaseRefused, match="has application id 5, expected 1146308688"):
        backend.append("s", [user(1)])
    tamper(path, "PRAGMA application_id = 1146308688")
    backend.append("s", [user(1)])
    assert backend.stored_count("s") == 2


# ---------------------------------------------------------------------------------------------
# file safety (§5.3)


def test_refuses_a_symlinked_database(tmp_path: Path) -> None:
    real = tmp_path / "d" / "real.db"
    private_db(real)
    link = tmp_path / "d" / "link.db"
    link.symlink_to(real)
    with pytest.raises(SessionDatabaseRefused) as info:
        SqliteBackend(str(link))
    assert str(info.value) == (
        f'session database "{link}" must be a regular file, not a symbolic link'
    )


def test_refuses_a_group_readable_database(tmp_path: Path) -> None:
    path = tmp_path / "d" / "open.db"
    private_db(path)
    path.chmod(0o640)
    with pytest.raises(SessionDatabaseRefused) as info:
        SqliteBackend(str(path))
    assert str(info.value) == (
        f'session database "{path}" must be owned by the current user and accessible only by'
        " that user"
    )


def test_refuses_a_world_writable_parent(tmp_path: Path) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(SessionDatabaseRefused) as info:
        SqliteBackend(str(parent / "sessions.db"))
    assert str(info.value) == (
        f'session database parent "{parent}" must be owned by the current user and not'
        " group/world-writable"
    )


def test_refuses_a_symlinked_parent(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(SessionDatabaseRefused) as info:
        SqliteBackend(str(link / "sessions.db"))
    assert str(info.value) == f'session database parent "{link}" must be a real directory'


def test_relative_paths_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    stored(Path("rel/sessions.db"), [turn_start(0)]).close()
    assert (tmp_path / "rel" / "sessions.db").is_file()


# ---------------------------------------------------------------------------------------------
# provenance encoding (§5.5)


@given(st.lists(st.integers(0, MAX_SAFE), max_size=20))
def test_provenance_round_trip(seqs: list[int]) -> None:
    assert decode_provenance(encode_provenance(seqs)) == seqs


def test_provenance_encoding_examples() -> None:
    assert encode_provenance([]) == b""
    assert encode_provenance([300]) == b"\xac\x02"
    assert encode_provenance([5, 7, 4, 4]) == b"\x05\x04\x05\x00"  # +2 -> 4, -3 -> 5, 0 -> 0


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (b"\x80\x00", "non-canonical varint"),
        (b"\x05\x81\x00", "non-canonical varint"),
        (b"\x80", "truncated varint"),
        (b"\x05\xff", "truncated varint"),
        (varint(MAX_SAFE + 1), "first value at byte 0 out of range"),
        (b"\x00" + varint(2 * MAX_SAFE + 1), "delta at byte 1 out of range"),
        (b"\x80" * 9 + b"\x01", "out of range (more than 8 continuation steps)"),
        (b"\x00\x01", "decoded seq -1 at byte 1 out of range"),
        (varint(MAX_SAFE) + b"\x02", "out of range"),
    ],
)
def test_malformed_provenance(blob: bytes, reason: str) -> None:
    with pytest.raises(MalformedProvenance) as info:
        decode_provenance(blob)
    assert str(info.value).startswith("malformed source_event_seqs storage value: ")
    assert reason in str(info.value)


def test_eight_continuation_steps_are_not_a_shift_overflow() -> None:
    blob = b"\x80" * 8 + b"\x01"  # shift 56: decodes to 2**56, which is merely too large
    with pytest.raises(MalformedProvenance, match="first value at byte 0 out of range$"):
        decode_provenance(blob)


def test_provenance_column_keeps_empty_arrays_and_duplicates(tmp_path: Path) -> None:
    events = [
        turn_start(0),
        make_event("user/message", 1, 1, {"id": "u"}, source_seqs=[]),
        make_event("user/message", 2, 2, {"id": "v"}, source_seqs=[1, 0, 0, 1]),
    ]
    backend = stored(db_path(tmp_path), events)
    conn = sqlite3.connect(db_path(tmp_path))
    assert conn.execute("SELECT source_event_seqs FROM events ORDER BY seq").fetchall() == [
        (None,),
        (b"",),
        (b"\x01\x01\x00\x02",),
    ]
    conn.close()
    assert values(backend.inspect("s").events[:3]) == values(events)


# ---------------------------------------------------------------------------------------------
# data compression (§5.5)


def test_stored_data_threshold() -> None:
    assert stored_data(b'"' + b"a" * 4093 + b'"') == '"' + "a" * 4093 + '"'  # 4095 bytes
    frame = stored_data(b'"' + b"a" * 4094 + b'"')
    assert isinstance(frame, bytes) and len(frame) < 4096


def test_compression_threshold_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = db_path(tmp_path)
    small = opaque(0, {"text": "a" * 3900})
    large = opaque(1, {"text": "ab" * 6000})
    backend = stored(path, [small, large])
    # Real JSON text always shrinks under zstd's literal coding, so a frame that does not is
    # simulated to reach the "not smaller: keep TEXT" rule.
    monkeypatch.setattr(sqlite_codec, "zstd_frame", lambda text: text + b"\x00")
    incompressible = opaque(2, {"text": "cd" * 6000})
    backend.append("s", [incompressible])
    kinds = [(seq, kind) for seq, _, kind, _, _ in physical(path)]
    assert kinds == [(0, "text"), (1, "blob"), (2, "text")]
    assert values(SqliteBackend(str(path)).inspect("s").events) == values(
        [small, large, incompressible]
    )


def test_compressed_blob_is_a_single_standard_frame(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    event = opaque(0, ["x" * 5000])
    stored(path, [event]).close()
    ((_, _, kind, data, _),) = physical(path)
    assert kind == "blob" and json.loads(data_text(data)) == ["x" * 5000]


# ---------------------------------------------------------------------------------------------
# packing bounds (§5.5)


def member_count(data: str | bytes) -> int:
    return len(json.loads(data_text(data))["texts"])


def test_a_long_run_splits_at_1024_members(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    events = [chunk(seq, f"t{seq}") for seq in range(2500)]
    backend = stored(path, events)
    rows = physical(path)
    assert [(seq, kind, ign) for seq, kind, _, _, ign in rows] == [
        (0, "text-chunks", 0),
        (1024, "text-chunks", 0),
        (2048, "text-chunks", 0),
    ]
    assert [member_count(data) for _, _, _, data, _ in rows] == [1024, 1024, 452]
    assert values(backend.inspect("s").events) == values(events)


def test_a_run_over_one_mebibyte_splits_by_size(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    text = "y" * 3000
    events = [chunk(seq, text) for seq in range(800)]
    backend = stored(path, events)
    rows = physical(path)
    sizes = [len(data_text(data).encode()) for _, _, _, data, _ in rows]
    counts = [member_count(data) for _, _, _, data, _ in rows]
    assert all(kind == "text-chunks" for _, kind, _, _, _ in rows)
    assert sum(counts) == 800 and len(rows) == 3
    assert all(size <= 1_048_576 for size in sizes)
    # the greedy split takes the largest member count that fits: one more would not
    assert all(1_048_576 - size < len(text) + 8 for size in sizes[:2])
    assert values(backend.inspect("s").events) == values(events)


def test_short_runs_and_mixed_batches_stay_scalar(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    events = [turn_start(0), chunk(1), chunk(2), user(3), chunk(4), chunk(5), chunk(6)]
    stored(path, events).close()
    assert [(seq, kind, ign) for seq, kind, _, _, ign in physical(path)] == [
        (0, "turn/start", None),
        (1, "assistant/chunk", None),
        (2, "assistant/chunk", None),
        (3, "user/message", None),
        (4, "text-chunks", 0),
    ]


# ---------------------------------------------------------------------------------------------
# reading: committed prefix, corruption, torn tails (§5.6)


def test_invalid_row_before_a_turn_end_is_corruption(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns()).close()
    tamper(path, "UPDATE events SET data = '{bad' WHERE seq = 1")
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        SqliteBackend(str(path)).inspect("s")
    assert str(info.value) == "corrupt session log: invalid committed physical row at seq 1"


def test_seq_gap_before_a_turn_end_is_corruption(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns()).close()
    tamper(path, "DELETE FROM events WHERE seq = 1")
    with pytest.raises(
        SessionPersistenceCorruptionError,
        match=r"^corrupt session log: invalid committed physical row at seq 2$",
    ):
        SqliteBackend(str(path)).inspect("s")


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET data = '{bad' WHERE seq = 4",
        "UPDATE events SET data = x'28b52ffd00' WHERE seq = 4",  # a torn Zstandard frame
        "UPDATE events SET source_event_seqs = x'80' WHERE seq = 4",
        "UPDATE events SET ignorable = 0 WHERE seq = 4",  # packed marker on a non-chunk type
        "UPDATE events SET seq = 9 WHERE seq = 4",
    ],
)
def test_invalid_row_after_the_last_turn_end_is_a_torn_tail(tmp_path: Path, sql: str) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns()).close()
    tamper(path, sql)
    backend = SqliteBackend(str(path))
    revision = backend.list_snapshots()[0].revision
    events = backend.inspect("s").events
    assert values(events[:4]) == values(two_turns()[:4])
    assert values(events[4:]) == [
        {
            "type": "turn/end",
            "seq": 4,
            "time": 3,
            "data": {"turn": 2, "reason": {"kind": "interrupted"}},
        }
    ]
    assert backend.read_stored("s").torn and backend.stored_count("s") == 4
    with pytest.raises(ValueError) as info:
        backend.append("s", [user(4)])
    assert str(info.value) == 'session "s" has a torn stored tail; repair it before appending'
    assert backend.list_snapshots()[0].revision == revision


def test_unverified_changes_under_a_writer_fail_tail_discovery(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = stored(path, two_turns())
    # a foreign change that does not bump the revision: only the physical tail check sees it
    tamper(path, "UPDATE events SET data = '{bad' WHERE seq = 4")
    with pytest.raises(ValueError) as info:
        backend.append("s", [user(5)])
    assert str(info.value) == "session s has an invalid physical tail at seq 4"
    tamper(path, "UPDATE sessions SET revision = revision + 1")
    with pytest.raises(ValueError, match="has a torn stored tail"):
        backend.append("s", [user(4)])


def test_tail_discovery_sees_an_overlapping_packed_row(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = stored(path, [chunk(seq) for seq in range(5)] + [user(5), user(6)])
    tamper(path, "UPDATE events SET seq = 3 WHERE seq = 5")  # rows: packed 0..4, 3, 6
    with pytest.raises(ValueError, match=r"^session s has an invalid physical tail at seq 3$"):
        backend.append("s", [user(7)])


def test_bad_columns_are_corruption_anywhere(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns()).close()
    tamper(path, "UPDATE events SET data = 5 WHERE seq = 4")
    with pytest.raises(
        SessionPersistenceCorruptionError,
        match=r"^corrupt session log: invalid events row at seq 4: data is not",
    ):
        SqliteBackend(str(path)).inspect("s")


def test_bad_compressed_data_in_the_committed_region_is_corruption(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns()).close()
    tamper(path, "UPDATE events SET data = ? WHERE seq = 1", zstandard.compress(b"\xff\xfe"))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        SqliteBackend(str(path)).inspect("s")
    assert str(info.value) == "corrupt session log: invalid committed physical row at seq 1"


def test_packed_rows_with_surface_fields_are_invalid(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, [chunk(0), chunk(1), chunk(2), turn_end(3)]).close()
    tamper(path, "UPDATE events SET surface_op = '\"append\"' WHERE seq = 0")
    with pytest.raises(SessionPersistenceCorruptionError, match="at seq 0$"):
        SqliteBackend(str(path)).inspect("s")


def test_scalar_rows_may_carry_a_tag_name(tmp_path: Path) -> None:
    events = [
        make_event("text-chunks", 0, 0, {"x": 1}, ignorable=True),
        make_event("text-chunks", 1, 1, {"x": 2}),
    ]
    backend = stored(db_path(tmp_path), events)
    assert values(backend.inspect("s").events) == values(events)


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("UPDATE sessions SET cwd = 'relative'", "cwd must be absent or an absolute path"),
        ("UPDATE sessions SET origin = 'human'", 'origin must be absent or "subagent"'),
        ("UPDATE sessions SET created_at = -1", "created_at must be a non-negative safe integer"),
        ("UPDATE sessions SET incarnation = 'x'", "incarnation must be a UUID"),
        ("UPDATE sessions SET id = ''", "id must be a non-empty string"),
    ],
)
def test_invalid_sessions_rows_are_corruption(tmp_path: Path, sql: str, problem: str) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)]).close()
    tamper(path, "PRAGMA foreign_keys = OFF")
    tamper(path, sql)
    backend = SqliteBackend(str(path))
    with pytest.raises(SessionPersistenceCorruptionError, match=problem):
        backend.list()


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (
            1,
            'session "s" uses log format v1, but this harness reads only v0: the log was written by'
            " a newer harness — upgrade the harness to open it",
        ),
        (
            -2,
            'session "s" uses log format v-2, older than the supported v0, and this build ships no'
            " upgrade path for it",
        ),
    ],
)
def test_other_format_versions_are_refused(tmp_path: Path, version: int, message: str) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0)]).close()
    tamper(path, "UPDATE sessions SET version = ?", version)
    backend = SqliteBackend(str(path))
    assert backend.list()[0].version == version  # listing does not refuse
    with pytest.raises(SessionFormatUnsupportedError) as info:
        backend.inspect("s")
    assert str(info.value) == message


def test_header_columns_round_trip(tmp_path: Path) -> None:
    full = header(
        "full",
        cwd="/home/ana",
        parentSession="p",
        seedLength=3,
        origin="subagent",
        delegationDepth=2,
        agentPreset="fast",
    )
    backend = SqliteBackend(str(db_path(tmp_path)))
    for h in (full, header("bare")):
        backend.create(h)
        backend.append(h.id, [turn_start(0)])
    assert {h.id: h.to_value() for h in backend.list()} == {
        "full": full.to_value(),
        "bare": header("bare").to_value(),
    }
    assert backend.inspect("bare").meta.to_value() == header("bare").to_value()


def test_legacy_shapes_are_normalized(tmp_path: Path) -> None:
    message = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}
    backend = stored(
        db_path(tmp_path),
        [
            turn_start(0),
            make_event("steering/message", 1, 1, {"turn": 1, "message": message}),
            turn_end(2),
        ],
    )
    assert backend.inspect("s").events[1].to_value() == {
        "type": "user/message",
        "seq": 1,
        "time": 1,
        "data": message,
    }


def test_closers_for_an_interrupted_tool_call(tmp_path: Path) -> None:
    call = {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": '{"cmd":"ls"}'}
    assistant = {
        "turn": 1,
        "step": 1,
        "message": {"id": "a", "role": "assistant", "content": [call], "source": {"kind": "model"}},
    }
    events = [
        turn_start(0),
        user(1),
        make_event("step/start", 2, 2, {"turn": 1, "step": 1}),
        make_event("assistant/message", 3, 3, assistant, surface_op="append", source_seqs=[1]),
        make_event(
            "tool/call",
            4,
            40,
            {"turn": 1, "step": 1, "callId": "call-1", "name": "bash", "arguments": '{"cmd":"ls"}'},
        ),
    ]
    backend = stored(db_path(tmp_path), events)
    logical = backend.inspect("s").events
    assert values(logical[:5]) == values(events)
    result, step_end, end = values(logical[5:])
    assert result["seq"] == 5 and result["time"] == 40
    assert result["data"]["message"]["id"] == "interrupted-tool-result-call-1-5"
    assert result["data"]["error"] == {
        "name": "ToolOutcomeUnknownError",
        "code": "TOOL_OUTCOME_UNKNOWN",
    }
    assert result["sourceEventSeqs"] == [4] and result["surfaceOp"] == "append"
    assert result["data"]["message"]["content"][0]["content"][0]["text"] == OUTCOME_UNKNOWN_TEXT
    assert step_end == {"type": "step/end", "seq": 6, "time": 40, "data": {"turn": 1, "step": 1}}
    assert end == {
        "type": "turn/end",
        "seq": 7,
        "time": 40,
        "data": {"turn": 1, "reason": {"kind": "interrupted"}},
    }
    assert backend.stored_count("s") == 5  # closers are never stored


# ---------------------------------------------------------------------------------------------
# revisions (§5.8)


def test_revision_changes_on_append_only(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = stored(path, [turn_start(0)])
    (first,) = backend.list_snapshots()
    backend.inspect("s")
    backend.read_stored("s")
    assert backend.list_snapshots()[0].revision == first.revision
    assert backend.read_stored("s").revision == first.revision
    assert SqliteBackend(str(path)).list_snapshots()[0].revision == first.revision
    st_ = path.stat()
    assert first.revision.startswith(f"file:{st_.st_dev}:{st_.st_ino}:")
    assert first.revision.endswith(":revision:1")
    backend.append("s", [user(1)])
    second = backend.list_snapshots()[0].revision
    assert second != first.revision and second.endswith(":revision:2")
    with pytest.raises(ValueError):
        backend.append("s", [user(5)])
    assert backend.list_snapshots()[0].revision == second


def test_revisions_are_qualified_by_store(tmp_path: Path) -> None:
    one = stored(tmp_path / "a" / "s.db", [turn_start(0)])
    two = stored(tmp_path / "b" / "s.db", [turn_start(0)])
    assert one.list_snapshots()[0].revision != two.list_snapshots()[0].revision


# ---------------------------------------------------------------------------------------------
# writing (§2.1, §5.7)


def test_create_is_lazy(tmp_path: Path) -> None:
    backend = SqliteBackend(str(db_path(tmp_path)))
    backend.create(header("s"))
    assert backend.list() == [] and backend.stored_count("s") is None
    with pytest.raises(LookupError, match='^session "s" not found$'):
        backend.inspect("s")


def test_create_refusals(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = stored(path, [turn_start(0)])
    with pytest.raises(ValueError) as info:
        backend.create(header("s"))
    assert str(info.value) == 'session "s" already exists in this backend'
    with pytest.raises(ValueError) as info:
        SqliteBackend(str(path)).create(header("s"))
    assert str(info.value) == (
        'session "s" already has a persisted log on disk; load/resume it instead of creating'
    )
    for created_at in (-1, 1.5, True, MAX_SAFE + 1):
        with pytest.raises(ValueError, match="created_at"):
            backend.create(Header.build(version=0, id="t", createdAt=created_at))
    with pytest.raises(ValueError, match="cwd"):
        backend.create(header("t", cwd="relative"))


def test_append_to_an_unknown_session(tmp_path: Path) -> None:
    backend = SqliteBackend(str(db_path(tmp_path)))
    backend.append("nobody", [])  # an empty batch is a no-op
    with pytest.raises(LookupError) as info:
        backend.append("nobody", [turn_start(0)])
    assert str(info.value) == 'session "nobody" not found'


def test_append_contiguity_errors_write_nothing(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    backend = SqliteBackend(str(path))
    backend.create(header("s"))
    with pytest.raises(ValueError, match="not contiguous: expected seq 1 at index 1, got 2"):
        backend.append("s", [turn_start(0), user(2)])
    with pytest.raises(ValueError) as info:
        backend.append("s", [user(1)])
    assert str(info.value) == "session s append starts at seq 1, stored next seq is 0"
    assert backend.list() == []
    backend.append("s", [turn_start(0), user(1), turn_end(2)])
    revision = backend.list_snapshots()[0].revision
    with pytest.raises(ValueError) as info:
        backend.append("s", [user(5)])
    assert str(info.value) == "session s append starts at seq 5, stored next seq is 3"
    with pytest.raises(ValueError, match="ignorable"):
        backend.append("s", [make_event("x", 3, 3, {}, ignorable=False)])
    assert backend.list_snapshots()[0].revision == revision
    assert len(physical(path)) == 3


def test_appends_continue_a_log_written_by_another_instance(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, [turn_start(0), chunk(1), chunk(2), chunk(3)]).close()
    other = SqliteBackend(str(path))
    other.append("s", [chunk(4), chunk(5), chunk(6), turn_end(7)])
    other.append("s", [turn_start(8, 2)])
    assert other.stored_count("s") == 9
    assert [seq for seq, *_ in physical(path)] == [0, 1, 4, 7, 8]


def test_lone_surrogates_in_ids_and_types(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    session_id = "id-\ud800"
    events = [make_event("custom/\udfff", 0, 0, {"text": "\udc00 \u2028"})]
    stored(path, events, session_id=session_id).close()
    backend = SqliteBackend(str(path))
    assert [h.id for h in backend.list()] == [session_id]
    assert values(backend.inspect(session_id).events) == values(events)
    backend.append(session_id, [user(1)])
    assert backend.stored_count(session_id) == 2


def test_the_first_append_materializes_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = SqliteBackend(str(db_path(tmp_path)))
    backend.create(header("s"))
    # fail after the sessions row is inserted, inside the same transaction
    monkeypatch.setattr(sqlite_backend, "EVENT_INSERT", "INSERT INTO nowhere VALUES (?)")
    with pytest.raises(sqlite3.OperationalError):
        backend.append("s", [turn_start(0)])
    monkeypatch.undo()
    assert backend.list() == []
    backend.append("s", [turn_start(0)])
    assert backend.stored_count("s") == 1


# ---------------------------------------------------------------------------------------------
# read-only mounts, memory databases, cancellation, threads


def test_read_only_absent_and_pristine_files(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "sessions.db"
    backend = SqliteBackend(str(path), read_only=True)
    assert not backend.writable
    assert backend.list() == [] and backend.list_snapshots() == []
    assert backend.stored_count("s") is None
    with pytest.raises(LookupError):
        backend.inspect("s")
    assert not path.parent.exists()
    private_db(path)  # an empty file
    assert backend.list() == [] and path.stat().st_size == 0


def test_read_only_refuses_writes_and_reads_without_changing(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    stored(path, two_turns(), journal_mode="delete").close()
    backend = SqliteBackend(str(path), read_only=True, uri="sqlite:x?readOnly=true")
    assert backend.uri == "sqlite:x?readOnly=true"
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.create(header("t"))
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append("s", [user(5)])
    assert values(backend.inspect("s").events[:5]) == values(two_turns())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_read_only_applies_the_refusals(tmp_path: Path) -> None:
    path = tmp_path / "d" / "other.db"
    private_db(path, "CREATE TABLE t (x)")
    with pytest.raises(SessionDatabaseRefused, match="unversioned schema"):
        SqliteBackend(str(path), read_only=True).list()


def test_memory_databases_are_private(tmp_path: Path) -> None:
    one = stored(Path(":memory:"), two_turns())
    assert one.uri == "sqlite::memory:"
    two = SqliteBackend(":memory:")
    assert [h.id for h in one.list()] == ["s"] and two.list() == []
    assert one.list_snapshots()[0].revision.startswith("memory:store:")
    assert values(one.inspect("s").events[:5]) == values(two_turns())
    assert SqliteBackend(":memory:", read_only=True).list() == []
    assert not list(tmp_path.iterdir())


def test_cancelled_tokens_stop_reads() -> None:
    backend = stored(Path(":memory:"), [turn_start(0)])
    token = CancelToken()
    token.cancel()
    for call in (backend.list, backend.list_snapshots):
        with pytest.raises(SessionQueryCancelled):
            call(token)
    with pytest.raises(SessionQueryCancelled):
        backend.inspect("s", token)


def test_concurrent_readers_and_a_writer(tmp_path: Path) -> None:
    backend = stored(db_path(tmp_path), [turn_start(0)])
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(30):
                events = backend.inspect("s").events
                assert [e.seq for e in events] == list(range(len(events)))
                backend.list_snapshots()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for seq in range(1, 31):
        backend.append("s", [user(seq)])
    for thread in readers:
        thread.join()
    assert errors == [] and backend.stored_count("s") == 31


# ---------------------------------------------------------------------------------------------
# property: random balanced logs survive storage exactly

TEXT = st.text(
    st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\u2028", "😀"])), max_size=6
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE, MAX_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
SOURCES = st.none() | st.lists(st.integers(0, MAX_SAFE), max_size=4)


@st.composite
def chunk_run(draw: st.DrawFn, turn: int) -> list[dict[str, Any]]:
    kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta"]))
    index, step = draw(st.integers(0, 3)), draw(st.integers(1, 2))
    name = draw(st.none() | TEXT)
    out = []
    for _ in range(draw(st.integers(1, 6))):
        if kind == "tool-call-delta":
            c: dict[str, Any] = {"type": kind, "index": index, "id": "c1"}
            if name is not None:
                c["name"] = name
            c["argumentsDelta"] = draw(TEXT)
        else:
            c = {"type": kind, "index": index, "text": draw(TEXT)}
        out.append({"type": "assistant/chunk", "data": {"turn": turn, "step": step, "chunk": c}})
    return out


@st.composite
def log_item(draw: st.DrawFn, turn: int) -> list[dict[str, Any]]:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(chunk_run(turn))
    if choice == 1:
        data = {
            "id": draw(TEXT),
            "role": "user",
            "content": [{"type": "text", "text": draw(TEXT)}],
            "source": {"kind": "user"},
        }
        return [
            {"type": "user/message", "data": data, "surfaceOp": "append", "sources": draw(SOURCES)}
        ]
    if choice == 2:
        content = [
            {"type": "text", "text": draw(TEXT)},
            {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"},
        ]
        data = {
            "turn": turn,
            "step": 1,
            "message": {
                "id": draw(TEXT),
                "role": "assistant",
                "content": content,
                "source": {"kind": "model"},
            },
        }
        op = draw(st.sampled_from(["append", {"op": "replace", "start": 0, "end": 1}]))
        return [
            {"type": "assistant/message", "data": data, "surfaceOp": op, "sources": draw(SOURCES)}
        ]
    if choice == 3:
        return [
            {
                "type": "tool/call",
                "data": {
                    "turn": turn,
                    "step": 1,
                    "callId": "c1",
                    "name": "bash",
                    "arguments": "{}",
                },
            }
        ]
    if choice == 4:
        message = {
            "id": "r",
            "role": "user",
            "source": {"kind": "tool", "callId": "c1"},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "isError": False,
                    "content": [{"type": "text", "text": draw(TEXT)}],
                }
            ],
        }
        return [
            {
                "type": "tool/result",
                "data": {"turn": turn, "step": 1, "message": message},
                "surfaceOp": "append",
                "sources": draw(SOURCES),
            }
        ]
    kind = draw(st.sampled_from(["plugin/x", "text-chunks", "tool-call-chunks", "x/\ud800"]))
    return [{"type": kind, "data": draw(JSON), "ignorable": draw(st.booleans())}]


@st.composite
def balanced_batches(draw: st.DrawFn) -> list[list[Event]]:
    items: list[dict[str, Any]] = []
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        items.append({"type": "turn/start", "data": {"turn": turn}})
        for _ in range(draw(st.integers(0, 5))):
            items.extend(draw(log_item(turn)))
        items.append({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
    time = draw(st.integers(-MAX_SAFE // 2, MAX_SAFE // 2))
    events = []
    for seq, item in enumerate(items):
        time += draw(st.integers(-(10**6), 10**6))
        sources = item.get("sources")
        events.append(
            make_event(
                item["type"],
                seq,
                time,
                item["data"],
                surface_op=item.get("surfaceOp", UNSET),
                source_seqs=UNSET if sources is None else sources,
                ignorable=True if item.get("ignorable") else UNSET,
            )
        )
    cuts = sorted(draw(st.sets(st.integers(1, len(events) - 1), max_size=4)))
    bounds = [0, *cuts, len(events)]
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(balanced_batches())
def test_balanced_logs_round_trip_exactly(batches: list[list[Event]]) -> None:
    backend = SqliteBackend(":memory:")
    backend.create(header("p"))
    for batch in batches:
        backend.append("p", batch)
    written = [event for batch in batches for event in batch]
    assert values(backend.inspect("p").events) == values(written)
    assert values(backend.read_stored("p").events) == values(written)


# ---------------------------------------------------------------------------------------------
# crash safety: every acknowledged batch survives kill -9

BATCH = 8


def crash_batch(start: int) -> list[Event]:
    """One complete turn of BATCH events from seq ``start``; the crash child writes these."""
    turn = start // BATCH + 1
    return [
        turn_start(start, turn),
        user(start + 1, f"question {turn}"),
        *(chunk(start + k, f"{turn}.{k}") for k in range(2, 6)),
        make_event("assistant/message", start + 6, start + 6, {"turn": turn, "text": "a" * 5000}),
        turn_end(start + 7, turn),
    ]


def run_crash_child(path: str) -> None:
    """Append two turns at a time forever, printing the stored count after each append."""
    backend = SqliteBackend(path)
    count = backend.stored_count("crash")
    if count is None:
        backend.create(header("crash"))
        count = 0
    while True:
        backend.append("crash", crash_batch(count) + crash_batch(count + BATCH))
        count += 2 * BATCH
        print(count, flush=True)


CRASH_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[2]); import test_sqlite;"
    " test_sqlite.run_crash_child(sys.argv[1])"
)


def test_acknowledged_batches_survive_kill_9(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    tests_dir = str(Path(__file__).resolve().parent)
    rng = random.Random(7)
    acknowledged = 0
    for _ in range(5):
        child = subprocess.Popen(
            [sys.executable, "-c", CRASH_CHILD, str(path), tests_dir],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert child.stdout is not None
        watchdog = threading.Timer(10, child.kill)  # a stuck child fails the test, not the run
        watchdog.start()
        target = acknowledged + rng.randint(1, 6) * 2 * BATCH
        for line in child.stdout:
            acknowledged = int(line)
            if acknowledged >= target:
                break
        threading.Event().wait(rng.uniform(0, 0.02))
        child.kill()
        watchdog.cancel()
        rest, errors = child.communicate(timeout=10)
        acknowledged = max([acknowledged, *map(int, rest.split())])
        assert acknowledged >= target, errors
        backend = SqliteBackend(str(path))
        assert [h.id for h in backend.list()] == ["crash"]
        events = backend.inspect("crash").events
        assert len(events) >= acknowledged and len(events) % BATCH == 0
        expected = [e for start in range(0, len(events), BATCH) for e in crash_batch(start)]
        assert values(events) == values(expected)
        backend.close()


def test_listing_follows_every_change_of_the_database(tmp_path):
    """list_snapshots reuses its last listing only while the database is unchanged."""
    path = db_path(tmp_path)
    backend = stored(path, [user(0)], session_id="a")
    first = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert first == {s.header.id: s.revision for s in backend.list_snapshots()}
    backend.append("a", [user(1)])  # our own commit
    second = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert second["a"] != first["a"]
    other = SqliteBackend(str(path))  # another connection commits
    other.create(header("b"))
    other.append("b", [user(0)])
    assert set(s.header.id for s in backend.list_snapshots()) == {"a", "b"}
    tamper(path, "UPDATE sessions SET cwd = 'relative' WHERE id = 'b'")  # a foreign writer
    with pytest.raises(SessionPersistenceCorruptionError):
        backend.list_snapshots()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(["a", "b", "c/d", "\u00e9", "e\ud800"]), unique=True, max_size=4),
    st.sampled_from([None, "a", "b"]),
)
def test_list_one_is_the_listed_header_whenever_list_succeeds(
    ids: list[str], damaged: str | None
) -> None:
    """The point lookup (ListedLookup, semantics.md §3.0.5 step 4): the header ``list`` lists
    for the id, from the id's own row, whenever ``list`` succeeds; a damaged row fails only its
    own lookup."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.db"
        writer = SqliteBackend(str(path))
        for session_id in ids:
            writer.create(header(session_id))
            writer.append(session_id, [user(0)])
        writer.close()
        if damaged in ids:
            tamper(path, "UPDATE sessions SET cwd = 'relative' WHERE id = ?", damaged)
        backend = SqliteBackend(str(path), read_only=True)
        fresh = SqliteBackend(str(path), read_only=True)
        try:
            listed = {h.id: h.raw for h in fresh.list()}
        except SessionPersistenceCorruptionError:
            listed = None
        for session_id in [*ids, "absent"]:
            if listed is not None:
                found = backend.list_one(session_id, CancelToken())
                assert (None if found is None else found.raw) == listed.get(session_id)
            elif session_id == damaged:
                with pytest.raises(SessionPersistenceCorruptionError):
                    backend.list_one(session_id, CancelToken())
            else:  # another row is damaged: this lookup answers all the same
                found = backend.list_one(session_id, CancelToken())
                assert (found is None) == (session_id == "absent")
        backend.close()
        fresh.close()
