"""``dsh-query sync``'s pass-through of a ``jsonl:`` source's packed lines (postgres.md §6).

Property on a real PostgreSQL 15: syncing a JSONL root whose packed lines come in every form
(canonical, spaced, ASCII-escaped, split into short rows, over the row bounds, with a torn tail;
raw or Zstandard; events with tabs and carriage returns)
leaves what the repack path leaves (reports, exit code, sessions, change count), every session
reads back through the postgres backend as exactly the source's stored events, every row is
within the bounds of §2.1, and each canonical line inside one batch is stored as it is. And the
order in which several jobs start a jsonl: source's sessions: long transcripts first.
"""

from __future__ import annotations

import io
import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, LiteralString

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from dsh_query_server import jsoncodec
from dsh_query_server.cancel import CancelToken
from dsh_query_server.cli.sync import run
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.contract.backend import PersistenceBackend
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.logical.records import KeptLine
from dsh_query_server.persistence.postgres import open_postgres, rows
from dsh_query_server.sync import engine as sync_module
from dsh_query_server.sync import group as sync_group
from dsh_query_server.sync.log import SourceLog
from tests.pg_server import PgDatabase

_SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
IDS = ["a", "b", "c", "d"]
FORMS = ["canonical", "spaced", "ascii", "split", "torn", "whitespace"]


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sync's state files go to a fresh XDG_STATE_HOME, never the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def chunk(seq: int, kind: str, text: str, turn: int | float) -> Event:
    if kind == "tool":
        delta = {"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": text}
    elif kind == "named":
        delta = {
            "type": "tool-call-delta",
            "index": 1,
            "id": "c2",
            "name": "grep",
            "argumentsDelta": text,
        }
    else:
        delta = {"type": f"{kind}-delta", "index": 0, "text": text}
    data = {"turn": turn, "step": 1, "chunk": delta}
    return make_event("assistant/chunk", seq, seq * 7 - 3 * (seq % 2), data)


@st.composite
def log(draw: st.DrawFn) -> list[Event]:
    """Runs of chunks of one kind (packed by the JSONL writer) between notes."""
    events: list[Event] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["text", "reasoning", "tool", "named", "note"]))
        turn = draw(st.sampled_from([1, 2, 1.0]))
        for _ in range(draw(st.integers(1, 9))):
            text = draw(st.sampled_from(["x", "é", '"q"', "\u2028", "long " * 9]))
            seq = len(events)
            if kind == "note":
                events.append(make_event("x/note", seq, seq, {"text": text, "n": 1.0}))
            else:
                events.append(chunk(seq, kind, text, turn))
    return events


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    return {
        "logs": {i: draw(log()) for i in ids},
        "forms": {i: draw(st.lists(st.sampled_from(FORMS), max_size=6)) for i in ids},
        "batch": draw(st.sampled_from([3, 5, 1000])),
        "members": draw(st.sampled_from([4, 1024])),
        "data": draw(st.sampled_from([120, 1_048_576])),
        "jobs": draw(st.sampled_from([1, 2])),
        "compression": draw(st.sampled_from(["none", "none", "zstd"])),
    }


def _split(value: dict[str, Any], at: int) -> list[dict[str, Any]]:
    """One row as two rows, the first of ``at`` members (each its own seq0 and time0)."""
    data = value["data"]
    name = "args" if "args" in data else "texts"
    times = [value["time0"]]
    for gap in data["dt"]:
        times.append(times[-1] + gap)
    parts = []
    for lo, hi in ((0, at), (at, len(data[name]))):
        part = {**data, "dt": data["dt"][lo : hi - 1], name: data[name][lo:hi]}
        parts.append(
            {"type": value["type"], "seq0": value["seq0"] + lo, "time0": times[lo], "data": part}
        )
    return parts


def reform(path: Path, forms: list[str]) -> None:
    """Rewrites a transcript's packed lines, the k-th in ``forms[k]`` (canonical past them)."""
    lines = path.read_bytes().split(b"\n")[:-1]
    out, k, torn = [lines[0]], 0, False
    for line in lines[1:]:
        value = json.loads(line)
        if value["type"] not in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
            # JSON whitespace that COPY's text format must escape, in the event's exact bytes
            whitespace = "whitespace" in forms and value["seq"] % 2 == 0
            out.append(line.replace(b',"time":', b',\t"time":\r') if whitespace else line)
            continue
        form = forms[k] if k < len(forms) else "canonical"
        k += 1
        if form == "spaced":
            out.append(json.dumps(value, ensure_ascii=False).encode())
        elif form == "ascii":
            out.append(json.dumps(value, separators=(",", ":")).encode())
        elif form == "split":
            out.extend(jsoncodec.dumps(part) for part in _split(value, 1 + k % 2))
        else:
            out.append(line)
            torn = torn or form == "torn"
    text = b"\n".join(out) + b"\n" + (b'{"type":"x/note","seq":' if torn else b"")
    path.write_bytes(text)


def _all_events(source: PersistenceBackend, session_id: str, token: CancelToken) -> SourceLog:
    """The path before the pass-through: every kept line's members built and repacked."""
    log = sync_group.read_source(source, session_id, token)
    return SourceLog(log.header, log.events(), log.count)


@contextmanager
def bounds(case: dict[str, Any], repack: bool) -> Iterator[None]:
    """Smaller batches and row bounds to make cuts and oversized rows happen in small logs;
    ``repack`` keeps no source line as it is (the path before the pass-through)."""
    saved = (
        sync_module.MAX_BATCH_EVENTS,
        sync_group.MAX_BATCH_EVENTS,
        rows.MAX_MEMBERS,
        rows.MAX_DATA_BYTES,
        sync_module.read_source,
    )
    sync_module.MAX_BATCH_EVENTS = sync_group.MAX_BATCH_EVENTS = case["batch"]
    rows.MAX_MEMBERS, rows.MAX_DATA_BYTES = case["members"], case["data"]
    if repack:
        sync_module.read_source = _all_events
    try:
        yield
    finally:
        (
            sync_module.MAX_BATCH_EVENTS,
            sync_group.MAX_BATCH_EVENTS,
            rows.MAX_MEMBERS,
            rows.MAX_DATA_BYTES,
            sync_module.read_source,
        ) = saved


def q(schema: str, text: LiteralString) -> sql.Composed:
    return sql.SQL(text).format(s=sql.Identifier(schema))


def source_root(case: dict[str, Any]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="sync-pass-")) / "root"
    jsonl = JsonlBackend(str(root), compression=case["compression"])
    for index, (session_id, events) in enumerate(case["logs"].items()):
        jsonl.create(Header.build(version=0, id=session_id, createdAt=index, cwd="/p"))
        if events:
            jsonl.append(session_id, events)
    jsonl.close()
    reformed = list(root.glob("*/*/session.jsonl"))  # Zstandard transcripts stay canonical
    assert case["compression"] == "zstd" or len(reformed) == len(list(root.glob("*/*/")))
    for path in reformed:
        reform(path, case["forms"][path.parent.name])
    return root


def sync_into(db: PgDatabase, root: Path, case: dict[str, Any], repack: bool) -> dict[str, Any]:
    schema = f"s_{uuid.uuid4().hex[:12]}"
    target = db.socket_uri(schema=schema)
    out, err = io.StringIO(), io.StringIO()
    argv = ["--to", target, f"jsonl:{root}", "--json", "--jobs", str(case["jobs"])]
    with bounds(case, repack):
        code = run(argv, out, err)
    reader = open_postgres(target)
    try:
        stored = {
            str(h.id): [e.raw for e in reader.read_stored(str(h.id)).events] for h in reader.list()
        }
    finally:
        reader.close()
    with db.connect() as conn:
        made = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.store",)).fetchone()
        if made is None or not made[0]:  # nothing written: no store initialized
            return {"code": code, "report": json.loads(out.getvalue()), "stored": {}, "rows": []}
        found = conn.execute(
            q(
                schema,
                "SELECT s.id, s.header, s.event_count, e.seq, e.last_seq, e.record"
                " FROM {s}.events e JOIN {s}.sessions s ON s.pk = e.session_pk"
                " ORDER BY s.id, e.seq",
            )
        ).fetchall()
        changes = conn.execute(q(schema, "SELECT change_count FROM {s}.store")).fetchone()
    return {
        "code": code,
        "report": json.loads(out.getvalue()),
        "stored": stored,
        "rows": [(str(r[0]), int(str(r[3])), int(str(r[4])), str(r[5])) for r in found],
        "sessions": sorted({(str(r[0]), str(r[1]), int(str(r[2]))) for r in found}),
        "changes": changes,
    }


@settings(max_examples=30, deadline=None, suppress_health_check=_SLOW)
@given(case=scenarios())
def test_kept_rows_read_back_as_the_repack_path_and_the_source(
    pg_database: PgDatabase, case: dict[str, Any]
) -> None:
    root = source_root(case)
    passed = sync_into(pg_database, root, case, repack=False)
    repacked = sync_into(pg_database, root, case, repack=True)
    for key in ("code", "report", "stored", "sessions", "changes"):
        assert passed.get(key) == repacked.get(key), key
    assert passed["code"] == 0
    source = JsonlBackend(str(root))
    try:
        expected = {}
        kept: dict[str, list[tuple[int, int, bytes, int]]] = {}
        for h in source.list():
            header, pieces = source.read_stored_pieces(str(h.id))
            expected[str(h.id)] = [e.raw for e in rows.events_of(pieces)]
            plain = source.read_stored(str(h.id))  # the keeping read reads the same log
            assert expected[str(h.id)] == [e.raw for e in plain.events]
            assert header.raw == plain.header.raw
            kept[str(h.id)] = [
                (p.start, p.members, p.line, p.data_bytes)
                for p in pieces
                if isinstance(p, KeptLine)
            ]
    finally:
        source.close()
    assert passed["stored"] == {i: raws for i, raws in expected.items() if raws}
    rows_of = {(i, seq): (last, record) for i, seq, last, record in passed["rows"]}
    for _, seq, last, record in passed["rows"]:  # within the bounds of §2.1
        if last > seq:
            value = jsoncodec.loads(record)
            assert jsoncodec.dumps(value).decode() == record  # exact compact JSON (§2.3)
            data = value["data"]
            assert 3 <= last - seq + 1 <= case["members"]
            assert len(jsoncodec.dumps(data)) <= case["data"]
    for session_id, lines in kept.items():  # a canonical line inside one batch is its row
        for start, count, line, data_bytes in lines:
            inside = start // case["batch"] == (start + count - 1) // case["batch"]
            if inside and 3 <= count <= case["members"] and data_bytes <= case["data"]:
                assert rows_of[(session_id, start)] == (start + count - 1, line.decode())


@given(
    sizes=st.lists(
        st.one_of(st.integers(0, 3 << 20), st.sampled_from(["x", "1:2", "a:b:c:d:e"])),
        max_size=12,
    )
)
def test_long_transcripts_start_first_and_each_kind_keeps_its_order(
    sizes: list[int | str],
) -> None:
    snapshots = [
        Snapshot(
            Header.build(version=0, id=f"s{k}", createdAt=k),
            size if isinstance(size, str) else f"1:{k}:{size}:5:6",
        )
        for k, size in enumerate(sizes)
    ]
    source = JsonlBackend(tempfile.mkdtemp(prefix="sync-order-"))
    try:
        ordered = sync_group.long_first(source, snapshots)
    finally:
        source.close()
    long = [
        s
        for s, size in zip(snapshots, sizes, strict=True)
        if isinstance(size, int) and size >= 1 << 20
    ]
    assert ordered == long + [s for s in snapshots if not any(s is x for x in long)]
