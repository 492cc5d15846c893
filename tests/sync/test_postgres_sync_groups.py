"""``dsh-query sync``'s groups (postgres.md §6): small sessions new to the target share one
transaction. Properties on a real PostgreSQL 15: a grouped sync leaves the same target (every
header, row and byte, the change count), reports and exit code as the one-session-per-transaction
path; and a sync killed at any point leaves a valid prefix that a rerun completes."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, LiteralString

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from psycopg import sql

from dsh_query_server.cli.sync import run
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.logical.records import Piece
from dsh_query_server.persistence.postgres import open_postgres, rows
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.sync import engine as sync_module
from dsh_query_server.sync import group as sync_group
from tests.builders import header
from tests.pg_server import PgDatabase
from tests.sync.test_postgres_sync import sync_process

_SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
IDS = ["a", "b", "c", "d", "e", "f", "g"]


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sync's state files go to a fresh XDG_STATE_HOME, never the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def event(seq: int, kind: str, text: str) -> Event:
    if kind == "chunk":  # runs of these are packed into one row
        data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}
        return make_event("assistant/chunk", seq, seq, data)
    return make_event("x/note", seq, seq, {"text": text, "n": 1.0})


@st.composite
def log(draw: st.DrawFn) -> list[Event]:
    kinds = draw(st.lists(st.sampled_from(["chunk", "note"]), max_size=9))
    return [
        event(seq, kind, draw(st.sampled_from(["x", "y", "é"]))) for seq, kind in enumerate(kinds)
    ]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A jsonl source, a second source that may extend, trail, rewrite or re-head the same ids,
    and a target that may already hold a prefix of some of them."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    first = {i: draw(log()) for i in ids}
    second: dict[str, tuple[str, list[Event]]] = {}
    for i in draw(st.lists(st.sampled_from(IDS), max_size=4, unique=True)):
        base = first.get(i, [])
        how = draw(st.sampled_from(["same", "longer", "shorter", "other", "header", "new"]))
        if how == "longer":
            extra = draw(log())
            events = base + [event(len(base) + k, "note", "z") for k in range(len(extra))]
        elif how == "shorter":
            events = base[: draw(st.integers(0, len(base)))]
        elif how in ("other", "new"):
            events = draw(log())
        else:
            events = list(base)
        second[i] = ("/q" if how == "header" else "/p", events)
    stored = {}
    for i in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)):
        stored[i] = first[i][: draw(st.integers(1, max(1, len(first[i]))))]
    return {
        "first": first,
        "second": second,
        "stored": {i: e for i, e in stored.items() if e},
        "jobs": draw(st.sampled_from([1, 3])),
        "limit": draw(st.sampled_from([3, 5, 1000])),
    }


@contextmanager
def limits(events: int, grouped: bool) -> Iterator[None]:
    """Batches of at most ``events`` (the 1,000 of §6, smaller to make groups and splits happen
    in small examples); ``grouped=False`` is the one-session-per-transaction path, each batch
    through the backend's own ``append``."""
    saved = (sync_module.MAX_BATCH_EVENTS, sync_group.MAX_BATCH_EVENTS, sync_module.member)
    packing = sync_module.Sync._append
    sync_module.MAX_BATCH_EVENTS = sync_group.MAX_BATCH_EVENTS = events
    if not grouped:
        sync_module.member = lambda *args, **kwargs: None  # type: ignore[assignment]
        sync_module.Sync._append = _plain_append  # type: ignore[method-assign]
    try:
        yield
    finally:
        sync_module.MAX_BATCH_EVENTS, sync_group.MAX_BATCH_EVENTS, sync_module.member = saved
        sync_module.Sync._append = packing  # type: ignore[method-assign]


def _plain_append(self: Any, session_id: str, pieces: Sequence[Piece]) -> None:
    """The path without groups, packing ahead or kept lines: ``append`` per batch."""
    for batch in sync_group.batches(pieces):
        events = rows.events_of(batch)
        self.target.append(session_id, events)
        self.progress.appended(len(events))


def q(schema: str, text: LiteralString) -> sql.Composed:
    return sql.SQL(text).format(s=sql.Identifier(schema))


def target_rows(db: PgDatabase, schema: str) -> tuple[Any, ...]:
    """Everything of the store but its uuids, pks, times and writers."""
    with db.connect() as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.store",)).fetchone()
        if row is None or not row[0]:
            return ()  # nothing written: no store initialized
        sessions = conn.execute(
            q(schema, "SELECT id, header, created_at, event_count FROM {s}.sessions ORDER BY id")
        ).fetchall()
        events = conn.execute(
            q(
                schema,
                "SELECT s.id, e.seq, e.last_seq, e.record FROM {s}.events e"
                " JOIN {s}.sessions s ON s.pk = e.session_pk ORDER BY s.id, e.seq",
            )
        ).fetchall()
        changes = conn.execute(q(schema, "SELECT change_count FROM {s}.store")).fetchone()
        distinct = conn.execute(
            q(schema, "SELECT count(DISTINCT change) FROM {s}.sessions")
        ).fetchone()
    return sessions, events, changes, distinct


def sync_into(db: PgDatabase, case: dict[str, Any], grouped: bool) -> tuple[Any, ...]:
    schema = f"s_{uuid.uuid4().hex[:12]}"
    target = db.socket_uri(schema=schema)
    work = Path(tempfile.mkdtemp(prefix="sync-groups-"))
    root = work / "root"
    jsonl = JsonlBackend(str(root))
    for session_id, events in case["first"].items():
        jsonl.create(header(session_id, IDS.index(session_id), cwd="/p"))
        if events:
            jsonl.append(session_id, events)
    jsonl.close()
    sqlite = SqliteBackend(str(work / "second.db"))
    for session_id, (cwd, events) in case["second"].items():
        sqlite.create(header(session_id, IDS.index(session_id), cwd=cwd))
        if events:
            sqlite.append(session_id, events)
    sqlite.close()
    if case["stored"]:
        writer = open_postgres(target)
        for session_id, events in case["stored"].items():
            writer.create(header(session_id, IDS.index(session_id), cwd="/p"))
            writer.append(session_id, events)
        writer.close()
    out, err = io.StringIO(), io.StringIO()
    argv = ["--to", target, f"jsonl:{root}", f"sqlite:{work / 'second.db'}", "--json"]
    with limits(case["limit"], grouped):
        code = run([*argv, "--jobs", str(case["jobs"])], out, err)
    report = json.loads(out.getvalue())
    report["skipped"].sort(key=lambda s: (s["source"], s["id"]))
    lines = sorted(err.getvalue().replace(str(work), "<work>").splitlines())
    report = json.loads(json.dumps(report).replace(str(work), "<work>"))
    return code, report, lines, target_rows(db, schema)


@settings(max_examples=25, deadline=None, suppress_health_check=_SLOW)
@given(case=scenarios())
def test_grouped_sync_leaves_what_one_session_per_transaction_leaves(
    pg_database: PgDatabase, case: dict[str, Any]
) -> None:
    grouped = sync_into(pg_database, case, grouped=True)
    alone = sync_into(pg_database, case, grouped=False)
    assert grouped == alone
    assert grouped[0] in (0, 3)


class Big(tuple[str, dict[str, list[Event]]]):
    def __repr__(self) -> str:  # hypothesis prints its arguments
        return f"Big({self[0]!r})"


@pytest.fixture(scope="module")
def big_source(tmp_path_factory: pytest.TempPathFactory) -> Big:
    """300 small sessions (groups of many) and two of 1,500 events (batches of 1,000)."""
    root = tmp_path_factory.mktemp("big") / "root"
    logs = {
        f"k{i:03d}": [event(seq, "chunk" if seq % 3 else "note", f"{i}") for seq in range(i % 40)]
        for i in range(300)
    }
    logs["long1"] = [event(seq, "note", "l") for seq in range(1500)]
    logs["long2"] = [event(seq, "chunk", "m") for seq in range(1500)]
    jsonl = JsonlBackend(str(root))
    for index, (session_id, events) in enumerate(logs.items()):
        jsonl.create(header(session_id, index, cwd="/p"))
        if events:
            jsonl.append(session_id, events)
    jsonl.close()
    return Big((f"jsonl:{root}", logs))


def _change_count(db: PgDatabase, schema: str) -> int:
    with db.connect() as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.store",)).fetchone()
        if row is None or not row[0]:
            return 0
        count = conn.execute(q(schema, "SELECT change_count FROM {s}.store")).fetchone()
    return 0 if count is None else int(str(count[0]))


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=_SLOW,
    phases=[Phase.explicit, Phase.generate],  # an example is a process run: no shrinking
)
@given(after=st.integers(min_value=1, max_value=280))
def test_a_sync_killed_after_any_commit_leaves_a_valid_prefix_that_a_rerun_completes(
    pg_database: PgDatabase, big_source: Big, after: int
) -> None:
    source, logs = big_source
    schema = f"s_{uuid.uuid4().hex[:12]}"
    target = pg_database.socket_uri(schema=schema)
    process = sync_process(
        "--to", target, source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if _change_count(pg_database, schema) >= after:
                break
            time.sleep(0.005)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    finally:
        process.kill()
    reader = open_postgres(target)
    try:
        for h in reader.list():  # every stored session a valid prefix of its source
            events = reader.read_stored(str(h.id)).events
            expected = logs[str(h.id)]
            assert [e.raw for e in events] == [e.raw for e in expected[: len(events)]]
            assert len(events) == len(expected) or len(events) % 1000 == 0
        out, err = io.StringIO(), io.StringIO()
        assert run(["--to", target, source, "--json"], out, err) == 0, err.getvalue()
        counts = json.loads(out.getvalue())["sources"][0]
        listed = sum(1 for events in logs.values() if events)  # jsonl: lists no empty log
        assert counts["created"] + counts["grown"] + counts["unchanged"] == listed
        for session_id, expected in logs.items():
            if not expected:
                continue  # an empty log is never stored (postgres.md §3.5)
            events = reader.read_stored(session_id).events
            assert [e.raw for e in events] == [e.raw for e in expected]
    finally:
        reader.close()


def test_a_group_notifies_each_session_with_its_own_change(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    root = tmp_path / "root"
    jsonl = JsonlBackend(str(root))
    for index, session_id in enumerate(IDS):
        jsonl.create(header(session_id, index, cwd="/p"))
        jsonl.append(session_id, [event(0, "note", "x"), event(1, "chunk", "y")])
    jsonl.close()
    target = pg_database.socket_uri()
    listener = pg_database.connect()
    try:
        listener.execute("LISTEN dsh_query_changes")
        out, err = io.StringIO(), io.StringIO()
        assert run(["--to", target, f"jsonl:{root}", "--json"], out, err) == 0, err.getvalue()
        assert json.loads(out.getvalue())["sources"][0]["created"] == len(IDS)
        payloads = [
            json.loads(n.payload) for n in listener.notifies(timeout=2, stop_after=len(IDS))
        ]
        with pg_database.connect() as conn:
            rows = conn.execute("SELECT id, change, written_at FROM dsh_query.sessions").fetchall()
            store = conn.execute("SELECT change_count FROM dsh_query.store").fetchone()
        changes = {str(row[0]): int(str(row[1])) for row in rows}
    finally:
        listener.close()
    assert sorted(p["id"] for p in payloads) == sorted(IDS)  # one each, in the same transaction
    assert {p["id"]: p["change"] for p in payloads} == changes
    assert sorted(changes.values()) == list(range(1, len(IDS) + 1))  # a bump each
    assert store is not None and store[0] == len(IDS)
    assert len({row[2] for row in rows}) == 1  # one transaction: now() is its start
