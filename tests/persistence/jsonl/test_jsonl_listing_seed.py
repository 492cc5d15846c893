"""A jsonl: listing seeded with an earlier process's headers (JsonlBackend.export_listing /
seed_listing, kept in sync's state file, postgres.md §6) lists exactly what a cold listing lists,
whatever changed in the root since: appends, new sessions, removed ones, a rewritten transcript."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.model.event import Header, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend
from tests.builders import header

IDS = [f"s{i}" for i in range(6)]


def age(root: Path) -> None:
    """Every file and directory a minute old: its stat then proves what was read (proofs.py)."""
    past = time.time() - 60
    for directory, _, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(directory, name), (past, past))


def listing(backend: JsonlBackend) -> list[tuple[bytes, str]]:
    return [(s.header.raw, s.revision) for s in backend.list_snapshots()]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(st.sampled_from(IDS), min_size=1, unique=True),
    changes=st.lists(
        st.tuples(st.sampled_from(["append", "remove", "rewrite", "new"]), st.sampled_from(IDS)),
        max_size=5,
    ),
    aged=st.booleans(),
)
def test_a_seeded_listing_is_the_cold_listing(
    first: list[str], changes: list[tuple[str, str]], aged: bool
) -> None:
    root = Path(tempfile.mkdtemp(prefix="seed-")) / "root"
    try:
        writer = JsonlBackend(str(root))
        present: dict[str, int] = {}
        for session_id in first:
            writer.create(header(session_id, cwd="/p"))
            writer.append(session_id, [make_event("x/note", 0, 0, {"n": 0})])
            present[session_id] = 1
        writer.close()
        if aged:
            age(root)
        earlier = JsonlBackend(str(root), read_only=True)
        listing(earlier)
        kept = earlier.export_listing()
        writer = JsonlBackend(str(root))
        for change, session_id in changes:
            if change == "append" and session_id in present:
                seq = present[session_id]
                writer.append(session_id, [make_event("x/note", seq, seq, {"n": seq})])
                present[session_id] += 1
            elif change in ("remove", "rewrite") and session_id in present:
                shutil.rmtree(root / "--p--" / session_id)
                del present[session_id]
                if change == "rewrite":  # the same path, another transcript and header
                    rewriter = JsonlBackend(str(root))
                    rewriter.create(Header.build(version=0, id=session_id, createdAt=2, cwd="/p"))
                    rewriter.append(session_id, [make_event("x/note", 0, 0, {"n": 9})])
                    rewriter.close()
                    present[session_id] = 1
                # a new writer: ``writer`` remembers the ids and counts it wrote, and this outside
                # change removed or replaced one of them
                writer.close()
                writer = JsonlBackend(str(root))
            elif change == "new" and session_id not in present:
                writer.create(header(session_id, cwd="/p"))
                writer.append(session_id, [make_event("x/note", 0, 0, {"n": 0})])
                present[session_id] = 1
        writer.close()
        seeded = JsonlBackend(str(root), read_only=True)
        seeded.seed_listing(kept)
        cold = JsonlBackend(str(root), read_only=True)
        assert listing(seeded) == listing(cold)
        assert sorted(str(h.id) for h in cold.list()) == sorted(present)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def test_an_aged_root_is_listed_from_the_seed_without_reading_a_header(tmp_path: Path) -> None:
    root = tmp_path / "root"
    writer = JsonlBackend(str(root))
    writer.create(header("a", cwd="/p"))
    writer.append("a", [make_event("x/note", 0, 0, {"n": 0})])
    writer.close()
    age(root)
    earlier = JsonlBackend(str(root), read_only=True)
    before = listing(earlier)
    kept = earlier.export_listing()
    assert [entry[0] for entry in kept] == [str(root / "--p--" / "a")]
    # The transcript made unreadable keeps its stat but its ctime: a chmod changes the ctime,
    # so instead the seed's header is made recognisably different and must be what is listed.
    path, key, text, exact = kept[0]
    other = Header.build(version=0, id="a", createdAt=7, cwd="/p").raw.decode()
    seeded = JsonlBackend(str(root), read_only=True)
    seeded.seed_listing([(path, key, other, exact)])
    assert listing(seeded) == [(other.encode(), before[0][1])]  # the seed, not a read
    assert text.encode() == before[0][0]
