"""The importers' bulk read (issue 28): ``inspect_many`` answers every id exactly as
``inspect`` does, with or without the worker process that reads on a second core, and whatever
the worker's channel does (importing/worker.py, importing/shared.py)."""

from __future__ import annotations

import json
import os
import pathlib
import threading
import uuid
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.model.event import Event
from dsh_query_server.model.text import TEXT_TYPES, extract_text
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.results import (
    BulkResult,
    EventOutline,
    Inspection,
    Payloads,
    Reading,
)
from dsh_query_server.persistence.importing import shared
from dsh_query_server.persistence.importing.backend import ImportBackend
from dsh_query_server.persistence.importing.worker import (
    Broken,
    Init,
    read_frame,
    split_answer,
    write_frame,
)
from tests.import_helpers import REAL

CLAUDE = sorted((REAL / "claude-code").glob("*.jsonl"))
TYPES = sorted(TEXT_TYPES | {"session/title", "turn/start", "claude/progress", "step/start"})
CODEX = REAL / "codex" / "simonw-sample_codex_session.jsonl"

Pick = tuple[int, int, bool]  # fixture, cut (0: whole), a damaged line in the middle


def _session_id(data: bytes, key: bytes) -> str:
    for line in data.splitlines():
        if key in line:
            record = json.loads(line)
            value = record.get("sessionId") or record.get("payload", {}).get("id")
            if isinstance(value, str):
                return value
    raise AssertionError("no session id")


def _variant(data: bytes, old: str, new: str, cut: int, damaged: bool) -> bytes:
    lines = data.replace(old.encode(), new.encode()).splitlines(keepends=True)
    if cut:
        lines = lines[: max(1, cut % (len(lines) + 1))]
    if damaged:
        lines.insert(len(lines) // 2, b'{"damaged\n')
    return b"".join(lines)


def build_home(root: pathlib.Path, claude: Sequence[Pick], codex: Sequence[Pick]) -> None:
    for i, (f, cut, damaged) in enumerate(claude):
        data = CLAUDE[f].read_bytes()
        new = str(uuid.UUID(int=i + 1, version=4))
        path = root / "claude" / "projects" / f"-p{i % 3}" / f"{new}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_variant(data, _session_id(data, b'"sessionId"'), new, cut, damaged))
    data = CODEX.read_bytes()
    old = _session_id(data, b"session_meta")
    for i, (_, cut, damaged) in enumerate(codex):
        new = str(uuid.UUID(int=1000 + i, version=4))
        day = root / "codex" / "sessions" / "2026" / "01" / f"{i + 1:02d}"
        day.mkdir(parents=True, exist_ok=True)
        name = f"rollout-2026-01-{i + 1:02d}T00-00-00-{new}.jsonl"
        (day / name).write_bytes(_variant(data, old, new, cut, damaged))


def backends(root: pathlib.Path) -> list[ImportBackend]:
    return [
        ClaudeBackend(str(root / "claude"), f"claude:{root / 'claude'}"),
        CodexBackend(str(root / "codex"), f"codex:{root / 'codex'}"),
    ]


def assert_same(got: BulkResult, want: Inspection | Exception, payloads: Payloads = None) -> None:
    """``got`` is ``want``, but that with ``payloads`` (a Reading) an importer gives every event
    of a type not read whole as an EventOutline (its envelope, and its text when it reads that
    type's), or, when its read met a copy or a rewrite and started over whole, none."""
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
        return
    assert isinstance(got, Inspection)
    assert got.meta == want.meta and got.meta.raw == want.meta.raw
    assert len(got.events) == len(want.events)
    whole = payloads.whole if payloads is not None else frozenset[str]()
    outlined = [isinstance(g, EventOutline) for g in got.events]
    assert payloads is not None or not any(outlined)
    may = [w.type not in whole for w in want.events]  # what a Reading outlines
    assert outlined == may or not any(outlined)
    full: list[tuple[Event, Event]] = []
    for g, w in zip(got.events, want.events, strict=True):
        if isinstance(g, EventOutline):
            assert payloads is not None
            envelope = (w.type, w.seq, w.time, w.surface_op, w.source_seqs)
            assert (g.type, g.seq, g.time, g.surface_op, g.source_seqs) == envelope
            assert w.ignorable is UNSET
            assert g.text == (extract_text(w) if w.type in payloads.texts else "")
        else:
            full.append((g, w))
    assert [g.raw for g, _ in full] == [w.raw for _, w in full]
    assert [(g.type, g.seq, g.time, g.surface_op, g.source_seqs) for g, _ in full] == [
        (w.type, w.seq, w.time, w.surface_op, w.source_seqs) for _, w in full
    ]
    assert [g.data() for g, _ in full] == [w.data() for _, w in full]


def readings(types: list[str]) -> st.SearchStrategy[Payloads]:
    """None, the index's Reading, or any texts and whole types of ``types``."""
    some = st.frozensets(st.sampled_from(types))
    return st.one_of(
        st.none(),
        st.just(Reading(texts=TEXT_TYPES)),
        st.builds(Reading, texts=some, whole=some),
    )


def inspected(backend: ImportBackend, sid: str) -> Inspection | Exception:
    try:
        return backend.inspect(sid)
    except Exception as exc:  # noqa: BLE001 - compared with what the bulk read returns
        return exc


def check_home(
    root: pathlib.Path, worker: bool, monkeypatch: pytest.MonkeyPatch, payloads: Payloads = None
) -> int:
    monkeypatch.setenv(shared.ENV, "1" if worker else "0")
    asked = 0
    for backend in backends(root):
        ids = [str(h.id) for h in backend.list()] + ["no-such-session"]
        answers = list(backend.inspect_many(ids, 8192, NULL_TOKEN, payloads))
        assert [sid for sid, _ in answers] == ids
        for sid, got in answers:
            assert_same(got, inspected(backend, sid), payloads)
        asked += len(ids)
    return asked


picks = st.lists(
    st.tuples(st.integers(0, len(CLAUDE) - 1), st.integers(0, 200), st.booleans()),
    min_size=4,
    max_size=9,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    claude=picks,
    codex=picks,
    worker=st.booleans(),
    payloads=readings(TYPES),
)
def test_bulk_read_equals_inspect(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    claude: list[Pick],
    codex: list[Pick],
    worker: bool,
    payloads: Payloads,
) -> None:
    """Every answer is ``inspect``'s; with ``payloads``, as outlines carrying their texts."""
    root = tmp_path_factory.mktemp("home")
    build_home(root, claude, codex)
    assert check_home(root, worker, monkeypatch, payloads) > 2  # some ids listed


@pytest.fixture
def home(tmp_path: pathlib.Path) -> pathlib.Path:
    build_home(tmp_path, [(i % len(CLAUDE), 0, i == 3) for i in range(8)], [(0, 0, False)] * 4)
    return tmp_path


@pytest.mark.parametrize("misbehaving", ["Dies", "BadMagic", "WrongTypes", "WrongRequest"])
def test_a_broken_worker_changes_no_answer(home: pathlib.Path, misbehaving: str) -> None:
    """The child breaks its channel; every id is still answered as ``inspect`` answers it."""
    backend = ClaudeBackend(str(home / "claude"), f"claude:{home / 'claude'}")
    ids = [str(h.id) for h in backend.list()]
    assert len(ids) >= shared.PARALLEL_MIN
    spec = Init(
        "tests.persistence.importing.misbehaving", misbehaving, backend.home, backend.uri, {}
    )
    answers = list(shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), NULL_TOKEN))
    assert [sid for sid, _ in answers] == ids
    for sid, got in answers:
        assert_same(got, inspected(backend, sid))


def test_a_worker_that_cannot_start_changes_no_answer(home: pathlib.Path) -> None:
    backend = ClaudeBackend(str(home / "claude"), f"claude:{home / 'claude'}")
    ids = [str(h.id) for h in backend.list()]
    spec = Init("no.such.module", "Nothing", backend.home, backend.uri, {})
    answers = list(shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), NULL_TOKEN))
    for sid, got in answers:
        assert_same(got, inspected(backend, sid))


def test_the_worker_reads_its_share(home: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a worker, ids are read by both processes (the caller reads fewer than all)."""
    backend = ClaudeBackend(str(home / "claude"), f"claude:{home / 'claude'}")
    ids = [str(h.id) for h in backend.list()]
    own: list[str] = []

    def read_one(sid: str, token: object) -> BulkResult:
        own.append(sid)
        return backend._bulk_one(sid, NULL_TOKEN)

    spec = backend.worker_spec()
    assert spec is not None
    answers = list(shared.shared_reads(read_one, spec, ids, [0] * len(ids), NULL_TOKEN))
    assert len(own) < len(ids)
    for sid, got in answers:
        assert_same(got, inspected(backend, sid))


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.binary(max_size=3000), max_size=8),
    chunks=st.lists(st.integers(1, 700), min_size=1, max_size=20),
)
def test_frames_survive_short_reads_and_writes(parts: list[bytes], chunks: list[int]) -> None:
    """A frame written whole and handed over in arbitrary pieces is read back exactly."""
    r, w = os.pipe()
    mid_r, mid_w = os.pipe()
    try:
        write_frame(mid_w, *parts)
        os.close(mid_w)
        mid_w = -1
        framed = b""
        while chunk := os.read(mid_r, 65536):
            framed += chunk

        def trickle() -> None:
            at, k = 0, 0
            while at < len(framed):
                n = chunks[k % len(chunks)]
                os.write(w, framed[at : at + n])
                at, k = at + n, k + 1

        writer = threading.Thread(target=trickle)
        writer.start()
        assert read_frame(r) == b"".join(parts)
        writer.join()
    finally:
        for fd in (r, w, mid_r, mid_w):
            if fd >= 0:
                os.close(fd)


def test_truncated_or_foreign_frames_are_broken() -> None:
    r, w = os.pipe()
    os.write(w, b"DQW1\x00\x00\x00\x10short")
    os.close(w)
    with pytest.raises(Broken):
        read_frame(r)
    os.close(r)
    with pytest.raises(Broken):
        split_answer(b"\x00\x00\x00\x09garbage!!")
    with pytest.raises(Broken):
        split_answer(b"\x00")


def test_a_bulk_read_left_early_stops_its_worker(home: pathlib.Path) -> None:
    """The caller stops after two answers (a cancelled build): the feeder thread ends and the
    worker process is gone, whatever it was still reading."""
    backend = ClaudeBackend(str(home / "claude"), f"claude:{home / 'claude'}")
    ids = [str(h.id) for h in backend.list()]
    spec = backend.worker_spec()
    assert spec is not None
    before = {t.name for t in threading.enumerate()}
    reads = shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), NULL_TOKEN)
    for (sid, got), want in zip(reads, ids[:2], strict=False):
        assert sid == want
        assert_same(got, inspected(backend, sid))
    reads.close()
    assert "read-worker-feeder" not in {t.name for t in threading.enumerate()} - before
