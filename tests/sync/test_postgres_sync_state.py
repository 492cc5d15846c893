"""What sync's state file proves in the next run (postgres.md §6), on a real PostgreSQL 15: a run
that trusts it (the target listing's stamp, a jsonl: source's directory proofs and headers)
reports exactly what a cold run reports, whatever changed in the source or the target since:
appends, removals, rewrites, new sessions, new and removed directories, another writer."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from dsh_query_server.cli.sync import run
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend, project_dir
from dsh_query_server.persistence.postgres import open_postgres
from dsh_query_server.persistence.postgres.backend import PostgresBackend
from dsh_query_server.sync.state import SyncState
from tests.pg_server import PgDatabase, PgServer

IDS = ("a", "b", "c", "d", "e")
CWDS = ("/w/one", "/w/two", "/w/three")


def ev(seq: int, text: str = "x") -> Event:
    """A text chunk: three or more in one append are one packed line, which sync keeps whole
    and its digest covers as a line (sync/log.py)."""
    chunk = {"type": "text-delta", "index": 0, "text": text}
    return make_event("assistant/chunk", seq, seq, {"turn": 1, "step": 1, "chunk": chunk})


@contextmanager
def state_home(path: Path) -> Iterator[None]:
    previous = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = previous


def sync(home: Path, *argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with state_home(home):
        code = run([*argv, "--json"], out, err)
    report = json.loads(out.getvalue()) if out.getvalue() else {}
    for key in ("skipped", "failed"):
        report[key] = sorted(report.get(key, []), key=json.dumps)
    return code, report, err.getvalue()


def age(root: Path) -> None:
    """Every file and directory an hour old, so their stats prove what is read (proofs.py)."""
    past = time.time() - 3600
    for directory, _, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(directory, name), (past, past))


class World:
    """A jsonl: root and a postgres target, changed step by step."""

    def __init__(self, root: Path, target: str) -> None:
        self.root = root
        self.target = target
        self.lengths: dict[str, int] = {}
        self.cwd: dict[str, str] = {}

    def create(self, session_id: str, cwd: str, count: int, text: str = "x") -> None:
        writer = JsonlBackend(str(self.root), compression="none")
        writer.create(Header.build(version=0, id=session_id, createdAt=1, cwd=cwd))
        writer.append(session_id, [ev(i, text) for i in range(count)])
        writer.close()
        self.lengths[session_id], self.cwd[session_id] = count, cwd

    def session_dir(self, session_id: str) -> Path:
        return self.root / project_dir(self.cwd[session_id]) / session_id

    def step(self, kind: str, data: st.DataObject) -> None:
        present = sorted(self.lengths)
        chosen = data.draw(st.sampled_from(IDS))
        cwd = data.draw(st.sampled_from(CWDS))
        if kind == "new" and chosen not in self.lengths:
            self.create(chosen, cwd, data.draw(st.integers(1, 3)))
        elif kind in ("append", "remove", "rewrite") and present:
            session_id = data.draw(st.sampled_from(present))
            if kind == "append":
                writer = JsonlBackend(str(self.root), compression="none")
                count = self.lengths[session_id]
                writer.append(session_id, [ev(count + k) for k in range(3)])
                writer.close()
                self.lengths[session_id] = count + 3
                return
            shutil.rmtree(self.session_dir(session_id))
            del self.lengths[session_id]
            if kind == "rewrite":  # the same id and path, other events: the target diverges
                self.create(session_id, self.cwd[session_id], 3, "rewritten")
        elif kind == "rmproject":
            project = self.root / project_dir(cwd)
            if project.exists():
                shutil.rmtree(project)
                for session_id in [s for s in present if self.cwd[s] == cwd]:
                    del self.lengths[session_id]
        elif kind in ("target_append", "target_new"):
            other = open_postgres(self.target)  # another writer
            try:
                count = other.stored_count(chosen)
                if kind == "target_new" and count is None:
                    other.create(Header.build(version=0, id=chosen, createdAt=1, cwd=cwd))
                    other.append(chosen, [ev(0), ev(1, "theirs")])
                elif kind == "target_append" and count is not None:
                    other.append(chosen, [ev(count, "theirs")])
            finally:
                other.close()
        elif kind == "age":
            age(self.root)


STEPS = ["new", "append", "remove", "rewrite", "rmproject", "target_append", "target_new", "age"]


def check_proof(target: str, source: str, home: Path) -> bool:
    """Where the kept state proves target revisions, they are the cold listing's. True when it
    proved every session of the state."""
    backend = open_postgres(target)
    try:
        with state_home(home):
            state = SyncState(backend.uri, source)
        ids = sorted(state.entries)
        proven = state.proven_revisions(backend.listing_stamp(), ids)
        listed = {str(s.header.id): s.revision for s in backend.list_snapshots()}
    finally:
        backend.close()
    if proven is None:
        return False
    assert proven == {i: listed.get(i) for i in ids}
    return True


@pytest.fixture(name="database_factory")
def database_factory_fixture(pg_server: PgServer) -> Iterator[Any]:
    made: list[str] = []

    def make() -> PgDatabase:
        name = f"t_{uuid.uuid4().hex[:16]}"
        made.append(name)
        return pg_server.create_database(name)

    yield make
    with pg_server.admin() as conn:
        for name in made:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.lists(st.sampled_from(STEPS), max_size=3), min_size=1, max_size=5),
    st.data(),
)
def test_a_run_that_trusts_its_state_reports_as_a_cold_run(
    database_factory: Any, rounds: list[list[str]], data: st.DataObject
) -> None:
    target = database_factory().socket_uri()
    with tempfile.TemporaryDirectory() as directory:
        root, home = Path(directory) / "root", Path(directory) / "state"
        source = f"jsonl:{root}"
        world = World(root, target)
        for index, session_id in enumerate(IDS[:3]):
            world.create(session_id, CWDS[index % 2], 2)
        age(root)
        code, _, err = sync(home, "--to", target, source)
        assert code == 0, err
        for number, steps in enumerate(rounds):
            for kind in steps:
                world.step(kind, data)
            # The reference: a dry run with no state reads everything and writes nothing.
            cold = sync(Path(directory) / f"cold{number}", "--to", target, source, "--dry-run")
            assert sync(home, "--to", target, source)[:2] == cold[:2]
            check_proof(target, source, home)


def test_a_no_change_run_neither_lists_the_target_nor_reads_the_root(
    tmp_path: Path, pg_database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = tmp_path / "root", tmp_path / "state"
    target, source = pg_database.socket_uri(), f"jsonl:{tmp_path / 'root'}"
    world = World(root, target)
    for index, session_id in enumerate(IDS):
        world.create(session_id, CWDS[index % 3], 3)
    age(root)
    assert sync(home, "--to", target, source)[0] == 0
    assert check_proof(target, source, home)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read")

    for name in ("stamped_listing", "list_snapshots", "read_stored", "stored_count"):
        monkeypatch.setattr(PostgresBackend, name, refused)
    monkeypatch.setattr("dsh_query_server.persistence.jsonl.proofs.scandir", refused)
    monkeypatch.setattr("dsh_query_server.persistence.jsonl.listing.read_raw_header", refused)
    code, report, err = sync(home, "--to", target, source)
    assert code == 0, err
    assert report["sources"][0]["unchanged"] == len(IDS)
    monkeypatch.undo()
    # Another writer appends: the stamp moves, the target is listed and the session read.
    other = open_postgres(target)
    try:
        other.append("b", [ev(3, "theirs")])
    finally:
        other.close()
    code, report, err = sync(home, "--to", target, source)
    assert code == 0, err
    assert report["sources"][0]["behind"] == 1 and report["sources"][0]["unchanged"] == 4


def synced_one(tmp_path: Path, db: PgDatabase) -> tuple[World, Path, str, str]:
    """A root with one aged two-event session "a", synced once: (world, state home, target,
    source)."""
    root, home = tmp_path / "root", tmp_path / "state"
    target, source = db.socket_uri(), f"jsonl:{root}"
    world = World(root, target)
    world.create("a", CWDS[0], 2)
    age(root)
    assert sync(home, "--to", target, source)[0] == 0
    return world, home, target, source


def test_a_recreated_store_is_listed_again(tmp_path: Path, pg_database: PgDatabase) -> None:
    _, home, target, source = synced_one(tmp_path, pg_database)
    with pg_database.connect() as conn:
        conn.execute("DROP SCHEMA dsh_query CASCADE")
    code, report, err = sync(home, "--to", target, source)
    assert code == 0 and report["sources"][0]["created"] == 1, err
    reader = open_postgres(target)
    try:
        assert [e.raw for e in reader.read_stored("a").events] == [ev(0).raw, ev(1).raw]
    finally:
        reader.close()


def test_a_source_that_kept_its_prefix_under_a_conflicting_header_is_skipped(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    """The state's digest stands in for reading the target only for the header it was made
    with: the same events re-created under another cwd (and grown) conflict with the stored
    header, as a cold run reports."""
    world, home, target, source = synced_one(tmp_path, pg_database)
    shutil.rmtree(world.session_dir("a"))
    world.create("a", CWDS[1], 3)
    cold = sync(tmp_path / "cold", "--to", target, source, "--dry-run")
    code, report, err = sync(home, "--to", target, source)
    assert (code, report) == cold[:2]
    assert code == 3 and [s["reason"] for s in report["skipped"]] == ["conflict"], err
