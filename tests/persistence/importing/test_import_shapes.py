"""A batch of titles reads its logs' shapes in one bulk read (importing/shapes.py,
``ImportBackend.read_shapes``): a worker process maps the logs beside this one and only each
log's length and last title cross the pipe.

With the worker on for every bulk read, a kept Claude + Codex composite answers exactly what fresh
backends inspecting every log answer, through random changes made now (too young to prove: no
shape is kept) or aged; by count, each log is mapped once, its shape kept, no window memo built;
and a shape digest that does not decode is never kept."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.results import Digested
from dsh_query_server.persistence.importing import shared
from dsh_query_server.persistence.importing.backend import stat_key
from dsh_query_server.persistence.importing.shapes import (
    TITLE_READING,
    Shape,
    shape_digest,
    shape_of,
)
from dsh_query_server.persistence.mount.composite import composite
from tests.persistence.importing.test_import_listing import SETTINGS, Clock, apply
from tests.persistence.importing.test_import_title_memo import (
    OP,
    CountedClaude,
    mounted,
    title_line,
    titled_home,
    titles,
)
from tests.persistence.test_window import InspectOnly, service_over


@pytest.fixture(autouse=True)
def _worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(shared.ENV, "1")  # a worker for any bulk read
    monkeypatch.setattr(shared, "PARALLEL_MIN", 2)  # of 2 ids or more (a batch reads shapes)


@settings(SETTINGS, max_examples=12)
@given(st.lists(OP, min_size=4, max_size=12))
def test_titles_through_the_worker_equal_fresh_full_reads(ops) -> None:
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        kept = service_over(mounted(root))
        clock = Clock()
        for op, aged in ops:
            apply(root, clock, op, aged)
        fresh = mounted(root)
        ids = [str(h.id) for h in fresh.list()] + ["absent"]
        expected = titles(service_over(InspectOnly(fresh)), ids)
        assert titles(kept, ids) == expected
        assert titles(kept, ids[::-1]) == expected[::-1]
    finally:
        shutil.rmtree(root)


def test_a_batch_maps_each_log_once_and_keeps_its_shape(tmp_path: pathlib.Path) -> None:
    clock = Clock()
    sids = [f"t{i}" for i in range(8)]
    home = titled_home(tmp_path, clock, sids)
    counted = CountedClaude(str(home))
    mappings = counted.mapped
    codex = tmp_path / "codex"
    service = service_over(composite([counted, CodexBackend(str(codex), f"codex:{codex}")], "auto"))
    got = titles(service, sids)
    assert [t["value"]["title"]["title"] for t in got] == sids
    kept = counted._shapes  # pyright: ignore[reportPrivateUsage]
    assert all(kept.get(sid, _key(counted, sid)) is not None for sid in sids)
    # The worker mapped most of them (this process may read a few ahead of it); none twice.
    assert len(mappings) < len(sids)
    assert all(p is not None and p.whole for p in mappings)
    assert counted._windows.size == 0  # pyright: ignore[reportPrivateUsage]
    # A log that changes is read again by the next batch; the others come from the title memo.
    rel = str((home / "projects" / "-w" / "t3.jsonl").relative_to(tmp_path))
    apply(tmp_path, clock, ("append", rel, title_line("t3", "renamed")), 1)
    counted.reads.clear()
    again = titles(service, sids)
    assert again[3]["value"]["title"]["title"] == "renamed"
    assert again[:3] + again[4:] == got[:3] + got[4:]
    assert set(counted.reads) == {"t3"}


def _key(backend: CountedClaude, sid: str) -> Any:
    cand = backend._listing.found[sid]  # pyright: ignore[reportPrivateUsage,reportOptionalMemberAccess]
    return (cand.path, stat_key(pathlib.Path(cand.path).stat()), cand.extra)


def test_shape_digests_round_trip_and_refuse_other_bytes(tmp_path: pathlib.Path) -> None:
    clock = Clock()
    home = titled_home(tmp_path, clock, ["t0"])
    backend = CountedClaude(str(home))
    backend.list()
    ins = backend.inspect_payloads("t0", TITLE_READING)
    want = Shape.of(ins)
    parts = shape_digest("t0", ins)
    got = shape_of(Digested(ins.meta, memoryview(b"".join(parts)), [len(parts[0])]))
    assert (got.meta, got.length) == (want.meta, want.length)
    assert got.title is not None and want.title is not None and got.title.raw == want.title.raw
    bare = msgspec.msgpack.encode((3, None))
    untitled = shape_of(Digested(ins.meta, memoryview(bare), [len(bare)]))
    assert (untitled.length, untitled.title) == (3, None)
    with pytest.raises(ValueError):
        shape_of(Digested(ins.meta, memoryview(b"\x00not a shape"), [12]))
