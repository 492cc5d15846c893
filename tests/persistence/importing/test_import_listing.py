"""Property tests of the fast listing (importers.md §3.1): a backend that keeps proofs between
listings lists exactly what a fresh backend lists, on random Claude and Codex homes that change
between calls (transcripts added, removed, appended, rewritten in place or replaced, sidecars and
index entries added or rewritten). Changes are made either "now" (their times are too young to
prove anything, so they must be read again) or aged to a distinct past time (so proofs hold and
are actually used); a final unchanged listing must read nothing at all."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import threading
import time
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.persistence.importing import survey
from dsh_query_server.persistence.importing.backend import ImportBackend, ImportError_

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
STAMP = "2026-01-01T00:00:%02d.000Z"
CODEX_IDS = [f"00000000-0000-7000-8000-0000000000{k:02d}" for k in range(2)]


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def listed(backend: ImportBackend) -> dict[str, tuple[Any, str]]:
    return {str(s.header.id): (s.header.to_value(), s.revision) for s in _snaps(backend)}


def _snaps(backend: ImportBackend) -> list[Snapshot]:
    return backend.list_snapshots()


def located(backend: ImportBackend, sid: str) -> object:
    """What a read of ``sid`` would open: from the last listing's proofs when they hold."""
    try:
        cand = backend._locate(sid, NULL_TOKEN)  # pyright: ignore[reportPrivateUsage]
    except (ImportError_, SessionPersistenceCorruptionError) as exc:
        return str(exc)
    return (cand.path, cand.revision, cand.header.to_value())


class Clock:
    """Distinct past times, one per aged change (so no two changes share an mtime)."""

    def __init__(self) -> None:
        self.next = time.time_ns() - 3600 * 10**9

    def age(self, *paths: pathlib.Path) -> None:
        for p in paths:
            if p.exists():
                self.next += 1_000_000_007
                os.utime(p, ns=(self.next, self.next))


def apply(root: pathlib.Path, clock: Clock, op: tuple[Any, ...], aged: int) -> None:
    """``aged``: 0 the change keeps its own times, 1 the file, 2 it and its folders are aged."""
    kind, rel, payload = op
    path = root / rel
    if kind == "write":  # add, or rewrite in place (same inode)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "r+b" if path.exists() else "wb") as f:
            f.write(payload)
            f.truncate()
    elif kind == "append" and path.exists():
        with open(path, "ab") as f:
            f.write(payload)
    elif kind == "replace":  # a new inode under the same name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(payload)
        os.replace(tmp, path)
    elif kind == "remove" and path.exists():
        path.unlink()
    if aged == 1:
        clock.age(path)
    elif aged == 2:
        clock.age(path, *path.parents[: len(pathlib.Path(rel).parts)])


def check(root: pathlib.Path, make: Any, ops: list[tuple[tuple[Any, ...], int]]) -> None:
    clock = Clock()
    kept = make(str(root))
    assert listed(kept) == listed(make(str(root)))
    ids = set(listed(kept))
    for op, aged in ops:
        apply(root, clock, op, aged)
        fresh = make(str(root))
        expected = listed(make(str(root)))
        for sid in ids | set(expected):  # before kept lists again
            assert located(kept, sid) == located(fresh, sid), (op, sid)
        for sid in ids | set(expected) | {"absent"}:  # the point lookup (ListedLookup)
            found = kept.list_one(sid)
            assert (None if found is None else found.to_value()) == (
                expected[sid][0] if sid in expected else None
            ), (op, sid)
        now = listed(kept)
        assert now == listed(make(str(root))), op
        ids |= set(now)
    # everything aged and listed once: the next listing is all proofs, no reads
    for folder, _, names in os.walk(root):
        clock.age(*(pathlib.Path(folder) / n for n in names), pathlib.Path(folder))
    assert listed(kept) == listed(make(str(root)))
    now = listed(kept)
    assert kept.survey_reads == 0
    listing = kept._listing  # pyright: ignore[reportPrivateUsage]
    assert listing is not None or not root.exists()
    assert all(listing.lookup(sid) is not None for sid in now if listing)  # no listing needed


# -- Claude ------------------------------------------------------------------------------

STEMS = ["11111111-1111-4111-8111-111111111111", "t2", "t3"]


@st.composite
def claude_body(draw: Any) -> bytes:
    out = b""
    if draw(st.booleans()):
        out += b"garbage\n"
    sid = draw(st.sampled_from([*STEMS, STEMS[0]]))
    anchor: dict[str, Any] = {
        "type": "user",
        "uuid": "u0",
        "sessionId": sid,
        "timestamp": STAMP % draw(st.integers(0, 59)),
        "cwd": draw(st.sampled_from(["/w", "rel"])),
        "message": {"role": "user", "content": draw(st.sampled_from(["x", "yy", "zzz"]))},
    }
    if draw(st.booleans()):
        anchor["forkedFrom"] = {"sessionId": draw(st.sampled_from(STEMS))}
    out += line(anchor)
    if draw(st.booleans()):
        out = out[:-1]  # the anchor's line is a final fragment
    return out


S0 = STEMS[0]
SUB = f"projects/-a/{S0}/subagents"
# few paths, so that ops often meet the same file twice and sidecars meet their transcripts
CLAUDE_PATHS = [
    f"projects/-a/{S0}.jsonl",
    "projects/-a/t2.jsonl",
    "projects/-b/t2.jsonl",
    "projects/-a/agent-x1.jsonl",
    f"{SUB}/agent-x1.jsonl",
    f"{SUB}/agent-x1.meta.json",
    f"{SUB}/agent-x2.jsonl",
    f"{SUB}/agent-x2.meta.json",
    f"{SUB}/workflows/r1/agent-x2.jsonl",
]


@st.composite
def claude_op(draw: Any, rel: str | None = None) -> tuple[tuple[Any, ...], int]:
    """A random change; with ``rel``, that file's first write."""
    kind = "write"
    if rel is None:
        kind = draw(st.sampled_from(["write", "write", "append", "replace", "remove"]))
    rel = rel if rel is not None else str(draw(st.sampled_from(CLAUDE_PATHS)))
    if rel.endswith(".meta.json"):
        meta = {"agentType": draw(st.sampled_from(["a", "b"]))}
        parent = draw(st.sampled_from([None, "x1", "x2"]))
        if parent is not None:
            meta["parentAgentId"] = parent
        payload = draw(st.sampled_from([json.dumps(meta).encode(), b"{broken"]))
    elif kind == "append":
        payload = draw(st.sampled_from([b"\n", line({"type": "x"}), b'{"type":"user"']))
    else:
        payload = draw(claude_body())
    return (kind, rel, payload), draw(st.integers(0, 2))


def claude_ops() -> st.SearchStrategy[list[tuple[tuple[Any, ...], int]]]:
    """Most files first written in the home the kept backend starts from, then changes."""
    first = st.lists(st.sampled_from(CLAUDE_PATHS), unique=True).flatmap(
        lambda rels: st.tuples(*(claude_op(r) for r in rels))
    )
    return st.tuples(first, st.lists(claude_op(), min_size=1, max_size=20)).map(
        lambda t: [*t[0], *t[1]]
    )


def _anchor(sid: str) -> bytes:
    return line({"type": "user", "uuid": "u", "sessionId": sid, "timestamp": STAMP % 0})


# a flat sub-agent whose rewritten anchor takes over a nested sub-agent's id (it is newer)
@example(
    [
        (("write", f"{SUB}/agent-x1.jsonl", _anchor(S0)), 2),
        (("write", "projects/-a/agent-x1.jsonl", _anchor("t2")), 2),
        (("write", "projects/-a/agent-x1.jsonl", _anchor(S0)), 1),
    ]
)
@SETTINGS
@given(claude_ops())
def test_claude_fast_listing_equals_a_fresh_listing(ops):
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        check(root / "h", lambda h: ClaudeBackend(h, f"claude:{h}"), ops)
    finally:
        shutil.rmtree(root)


# -- Codex -------------------------------------------------------------------------------


@st.composite
def codex_body(draw: Any, sid: str) -> bytes:
    meta = {
        "timestamp": STAMP % draw(st.integers(0, 59)),
        "type": "session_meta",
        "payload": {
            "id": draw(st.sampled_from([sid, sid, CODEX_IDS[0]])),
            "cwd": draw(st.sampled_from(["/w", "rel"])),
            "cli_version": draw(st.sampled_from(["0.77.0", "0.78.0"])),
        },
    }
    return line(meta) + line({"timestamp": STAMP % 1, "type": "event_msg", "payload": {}})


@st.composite
def codex_op(draw: Any) -> tuple[tuple[Any, ...], int]:
    sid = draw(st.sampled_from(CODEX_IDS))
    kind = draw(st.sampled_from(["write", "write", "append", "replace", "remove"]))
    rel = draw(
        st.sampled_from(
            [
                f"sessions/2026/01/01/rollout-x-{sid}.jsonl",
                f"sessions/2026/01/02/rollout-x-{sid}.jsonl",
                f"sessions/2026/01/01/rollout-x-{sid}.jsonl.zst",
                f"archived_sessions/rollout-y-{sid}.jsonl",
                "session_index.jsonl",
            ]
        )
    )
    if rel == "session_index.jsonl":
        name = draw(st.sampled_from(["one", "two"]))
        payload = line({"id": sid, "thread_name": name, "updated_at": STAMP % 3})
    elif kind == "append":
        payload = draw(st.sampled_from([b"\n", line({"type": "x"})]))
    else:
        payload = draw(codex_body(sid))
    if rel.endswith(".zst"):
        payload = zstandard.ZstdCompressor().compress(payload)
        kind = "replace" if kind == "append" else kind
    return (kind, rel, payload), draw(st.integers(0, 2))


@SETTINGS
@given(st.lists(codex_op(), min_size=1, max_size=20))
def test_codex_fast_listing_equals_a_fresh_listing(ops):
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        check(root / "h", lambda h: CodexBackend(h, f"codex:{h}"), ops)
    finally:
        shutil.rmtree(root)


def test_a_listing_beside_another_reuses_its_proofs(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two callers listing at once (the freshness poll beside a search, both at the start) read
    each transcript's head once, not once each: the second waits for the first and replays its
    proofs (ImportBackend._candidates). Both get the same listing."""
    sids = [f"{n:08d}-0000-4000-8000-000000000000" for n in range(120)]
    project = tmp_path / "projects" / "-a"
    project.mkdir(parents=True)
    for sid in sids:
        (project / f"{sid}.jsonl").write_bytes(_anchor(sid))
    Clock().age(*project.iterdir())
    scans: list[str] = []
    lock = threading.Lock()
    real_scan = survey._scan

    def counted(path: str, *args: Any) -> Any:
        with lock:
            scans.append(path)
        time.sleep(0.002)  # long enough that the two listings overlap
        return real_scan(path, *args)

    monkeypatch.setattr(survey, "_scan", counted)
    backend = ClaudeBackend(str(tmp_path), f"claude:{tmp_path}")
    start = threading.Barrier(2)
    results: list[dict[str, tuple[Any, str]]] = []

    def lister() -> None:
        start.wait()
        results.append(listed(backend))

    threads = [threading.Thread(target=lister) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and results[0] == results[1]
    assert sorted(results[0]) == sids
    assert len(scans) == len(sids)
