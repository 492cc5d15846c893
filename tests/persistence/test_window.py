"""Window and outline reads (persistence.md §2.5, semantics.md §3.3, §3.5, §3.10): readEvent,
listEvents and traceEvent through ``inspect_window``/``inspect_outline`` and the verification memo
answer exactly what the full ``inspect`` path answers, errors included."""

from __future__ import annotations

import itertools
import os
import sqlite3
import tempfile
from functools import partial
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import errors
from dsh_query_server.cancel import CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence import jsonl as jsonl_backend
from dsh_query_server.persistence.contract.results import Inspection, Window
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.jsonl import decode as jsonl_decode
from dsh_query_server.persistence.logical import closers, records
from dsh_query_server.persistence.logical import log as logical
from dsh_query_server.persistence.logical.memo import VerificationMemo
from dsh_query_server.persistence.logical.records import ChunkOutline
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.persistence.sqlite import backend as sqlite_backend
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.session.store import SessionStore
from tests.builders import EPOCH_MS, header

SID = "s"
CWD = "/home/ana/proj"
# The one session's header (at EPOCH_MS, in CWD, depth 0).
window_header = partial(header, SID, EPOCH_MS, cwd=CWD, delegationDepth=0)


# ---------------------------------------------------------------------------------------------
# logs


def chunk(seq: int, turn: int) -> Event:
    return make_event(
        "assistant/chunk",
        seq,
        1000 + seq,
        {"turn": turn, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"t{seq}"}},
    )


def build_log(plan: list[tuple[str, int]]) -> list[Event]:
    """Events for a plan of (kind, parameter) steps; seqs are contiguous from 0."""
    events: list[Event] = []
    turn = 0

    def add(kind: str, data: Any, **kw: Any) -> None:
        events.append(make_event(kind, len(events), 1000 + len(events), data, **kw))

    for kind, n in plan:
        if kind == "turn":
            turn += 1
            add("turn/start", {"turn": turn})
        elif kind == "end":
            add("turn/end", {"turn": max(turn, 1), "reason": {"kind": "completed"}})
        elif kind == "step":
            add("step/start", {"turn": turn, "step": n})
        elif kind == "stepend":
            add("step/end", {"turn": turn, "step": n})
        elif kind == "user":
            add(
                "user/message",
                {
                    "id": f"u{len(events)}",
                    "role": "user",
                    "content": [{"type": "text", "text": "hi"}],
                    "source": {"kind": "user"},
                },
                surface_op="append",
            )
        elif kind == "call":
            call_id = f"c{n}"
            add(
                "assistant/message",
                {
                    "turn": turn,
                    "step": 1,
                    "message": {
                        "id": f"a{len(events)}",
                        "role": "assistant",
                        "source": {"kind": "model"},
                        "content": [{"type": "tool-call", "id": call_id, "name": "x", "input": {}}],
                    },
                },
                surface_op="append",
            )
            if n % 2:
                add("tool/call", {"turn": turn, "callId": call_id})
        elif kind == "chunks":
            base = len(events)
            events.extend([chunk(base + k, turn) for k in range(n)])
        elif kind == "legacy-user":
            add(
                "user/message",
                {"content": [{"type": "text", "text": "old"}], "source": {"kind": "user"}},
                surface_op="append",
            )
        elif kind == "legacy-steering":
            add("steering/message", {"turn": 1, "content": [], "source": {"kind": "user"}})
        elif kind == "legacy-result":
            # A pre-react-loop tool result replacing an earlier event: its message id comes
            # from that event (rewrite 4), which may lie far outside a window.
            start = n % max(len(events), 1)
            add(
                "tool/result",
                {"callId": "c1", "content": [], "isError": False},
                surface_op={"op": "replace", "start": start, "end": start},
            )
        elif kind == "bad-legacy":
            add("turn/start", {"turn": 0, "trigger": {"kind": "user"}})  # malformed: corrupt
        elif kind == "bad-shape":
            add("user/message", {"content": "not blocks"}, surface_op="append")
        elif kind == "title":
            add(
                "session/title",
                {"title": f"title {len(events)}", "messageSeqs": [], "source": {"kind": "user"}},
            )
        elif kind == "bad-title":  # readTitles rejects the log when this is the last title
            add("session/title", {"title": 7, "messageSeqs": [], "source": {"kind": "user"}})
    return events


PLAN_STEP = st.one_of(
    st.tuples(st.sampled_from(["turn", "end", "user", "turn", "end", "user"]), st.just(0)),
    st.tuples(st.sampled_from(["step", "stepend", "call"]), st.integers(1, 3)),
    st.tuples(st.just("chunks"), st.integers(1, 40)),
    st.tuples(
        st.sampled_from(["legacy-user", "legacy-steering", "legacy-result"]), st.integers(0, 500)
    ),
    st.tuples(st.sampled_from(["bad-legacy", "bad-shape"]), st.just(0)),
    st.tuples(st.sampled_from(["title", "title", "bad-title"]), st.just(0)),
)
# A defect applied to the stored log: none, an invalid row/line at some position, or a torn tail.
DEFECT = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(["bad", "gap", "torn", "overlap", "overlap-end"]), st.integers(0, 10**6)
    ),
)


def batches(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    points = sorted({c % (len(events) + 1) for c in cuts} | {0, len(events)})
    return [events[a:b] for a, b in itertools.pairwise(points) if b > a]


# ---------------------------------------------------------------------------------------------
# stores


def write_sqlite(directory: str, events: list[Event], cuts: list[int]) -> str:
    path = os.path.join(directory, "store", "sessions.db")
    backend = SqliteBackend(path)
    backend.create(window_header())
    for batch in batches(events, cuts):
        backend.append(SID, batch)
    backend.close()
    return path


def damage_sqlite(path: str, defect: tuple[str, int] | None) -> None:
    if defect is None:
        return
    kind, where = defect
    conn = sqlite3.connect(path)
    seqs = [row[0] for row in conn.execute("SELECT seq FROM events ORDER BY seq")]
    if seqs:
        seq = seqs[where % len(seqs)]
        if kind == "bad":
            conn.execute("UPDATE events SET data = '{bad' WHERE seq = ?", (seq,))
        elif kind == "gap":
            conn.execute("DELETE FROM events WHERE seq = ?", (seq,))
        elif kind in ("overlap", "overlap-end"):  # a row whose seq a packed row already covers
            packed = [r[0] for r in conn.execute("SELECT seq FROM events WHERE ignorable = 0")]
            if packed:
                # The last packed row is the likeliest to have no turn/end after it (torn).
                start = packed[-1] if kind == "overlap" else packed[where % len(packed)]
                # A turn/end proves the overlap committed (corrupt); another type is torn.
                conn.execute(
                    "INSERT OR IGNORE INTO events (session_id, seq, type, time, data)"
                    " VALUES ('s', ?, ?, 0, '{\"turn\":1}')",
                    (start + 1, "turn/end" if kind == "overlap-end" else "plugin/note"),
                )
        else:  # a torn last row, as a crash mid-append could leave
            conn.execute("UPDATE events SET data = '{torn' WHERE seq = ?", (seqs[-1],))
    conn.commit()
    conn.close()


def write_jsonl(directory: str, events: list[Event], cuts: list[int], compression: str) -> str:
    root = os.path.join(directory, "root")
    backend = JsonlBackend(root, compression=compression)
    backend.create(window_header())
    for batch in batches(events, cuts):
        backend.append(SID, batch)
    return root


def damage_raw(root: str, defect: tuple[str, int] | None) -> None:
    if defect is None:
        return
    kind, where = defect
    path = os.path.join(root, jsonl_backend.project_dir(CWD), SID, "session.jsonl")
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    body = lines[1:]
    if kind == "torn":
        content = b"\n".join(lines) + b'\n{"type":"turn/'
    else:
        if body:
            at = where % len(body)
            if kind == "bad":
                body[at] = b"{bad"
            else:
                del body[at]
        content = b"\n".join([lines[0], *body]) + b"\n"
    with open(path, "wb") as f:
        f.write(content)


def damage_zstd(root: str, defect: tuple[str, int] | None) -> None:
    """The Zstandard counterparts: a frame that fails its checksum, a missing frame (a seq gap),
    a torn final frame (the file cut inside it), lines re-split across frames at arbitrary bytes
    (valid: a line may span frames), and a torn frame appended after the complete ones."""
    if defect is None:
        return
    kind, where = defect
    path = os.path.join(root, jsonl_backend.project_dir(CWD), SID, "session.jsonl.zstd")
    with open(path, "rb") as f:
        data = f.read()
    frames, _ = jsonl_backend.scan_frames(data)
    head, body = data[: frames[0][1]], [data[a:b] for a, b in frames[1:]]
    compress = jsonl_backend.zstd_frame
    if kind == "bad" and body:
        at = where % len(body)
        frame = bytearray(body[at])
        frame[len(frame) // 2] ^= 0x55
        body[at] = bytes(frame)
    elif kind == "gap" and body:
        del body[where % len(body)]
    elif kind == "torn" and body:
        body[-1] = body[-1][: max(4, (where % len(body[-1])))]
    elif kind == "overlap" and body:  # re-split the plaintext: lines spanning frames
        plain = b"".join(zstandard.ZstdDecompressor().decompressobj().decompress(f) for f in body)
        cuts = sorted(
            {(where * (k + 1) * 7919) % max(len(plain), 1) for k in range(3)} | {0, len(plain)}
        )
        body = [compress(plain[a:b]) for a, b in itertools.pairwise(cuts) if b > a]
    elif kind == "overlap-end":
        extra = compress(b'{"type":"plugin/note","seq":999999,"time":0,"data":{}}\n' * 3)
        body.append(extra[: max(4, where % len(extra))])
    with open(path, "wb") as f:
        f.write(head + b"".join(body))


class InspectOnly:
    """The contract's three read calls and nothing else: the service's full-inspect path."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.uri = backend.uri
        self.writable = False

    def list(self, token: CancelToken | None = None) -> list[Header]:
        return self.backend.list(token)

    def list_snapshots(self, token: CancelToken | None = None) -> Any:
        return self.backend.list_snapshots(token)

    def inspect(self, session_id: str, token: CancelToken | None = None) -> Inspection:
        return self.backend.inspect(session_id, token)


def service_over(backend: Any) -> SessionQueryService:
    binding = PersistenceBinding()
    binding.mount(backend)
    return SessionQueryService(SessionStore(), binding)


def outcome(call: Any, *args: Any) -> Any:
    try:
        return ("ok", to_builtins(call(*args)))
    except QueryError as exc:
        return ("error", exc.code, exc.message)


def same_answers(
    fast: SessionQueryService,
    full: SessionQueryService,
    length: int,
    probes: list[tuple[Any, int, int]],
) -> None:
    seqs = [0, 1, length - 1, length, length + 3, -1, 2.5] + [p[0] for p in probes]
    windows = [(s, b, a) for s in seqs for b, a in [(0, 0), (50, 50)]] + probes
    # Every window start, up to a point: a row boundary is where a window read could go wrong.
    windows += [(s, 0, 0) for s in range(min(length + 2, 150))]
    for repeat in range(2):  # the second pass reads through the memo
        for seq, before, after in windows:
            assert outcome(fast.read_event, SID, seq, before, after) == outcome(
                full.read_event, SID, seq, before, after
            ), (repeat, seq, before, after)
    assert outcome(fast.list_events, SID) == outcome(full.list_events, SID)
    for _ in range(2):  # verified, then through the memo: the title event is read alone
        assert outcome(fast.read_titles, [SID]) == outcome(full.read_titles, [SID])
    for seq in [0, length - 1, length, -1] + [p[0] for p in probes[:3]]:
        assert outcome(fast.trace_event, SID, seq) == outcome(full.trace_event, SID, seq), seq


LOG = st.lists(PLAN_STEP, max_size=30)
CUTS = st.lists(st.integers(0, 10**6), max_size=6)
PROBES = st.lists(
    st.tuples(st.integers(0, 400), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6
)
PROPERTY = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def compare_sqlite(plan, cuts, defect, probes) -> None:
    """Write the log through the real backend, damage it, and compare the fast service with one
    that can only call inspect."""
    events = build_log(plan)
    if not events:
        return
    with tempfile.TemporaryDirectory() as directory:
        path = write_sqlite(directory, events, cuts)
        damage_sqlite(path, defect)
        fast, full = SqliteBackend(path), SqliteBackend(path)
        try:
            same_answers(service_over(fast), service_over(InspectOnly(full)), len(events), probes)
        finally:
            fast.close()
            full.close()


@PROPERTY
@given(LOG, CUTS, DEFECT, PROBES)
def test_sqlite_windows_equal_the_full_inspect_path(plan, cuts, defect, probes) -> None:
    compare_sqlite(plan, cuts, defect, probes)


@PROPERTY
@given(LOG, CUTS, DEFECT, PROBES, st.sampled_from(["none", "zstd"]), st.integers(1, 5))
def test_jsonl_windows_equal_the_full_inspect_path(
    monkeypatch, plan, cuts, defect, probes, compression, mark_every
) -> None:
    monkeypatch.setattr(jsonl_decode, "MARK_EVERY", mark_every)  # seek hints in short logs
    events = build_log(plan)
    if not events:
        return
    with tempfile.TemporaryDirectory() as directory:
        root = write_jsonl(directory, events, cuts, compression)
        (damage_raw if compression == "none" else damage_zstd)(root, defect)
        fast, full = JsonlBackend(root, read_only=True), JsonlBackend(root, read_only=True)
        same_answers(service_over(fast), service_over(InspectOnly(full)), len(events), probes)


# ---------------------------------------------------------------------------------------------
# the memo: verified once per revision, re-verified on any change


def open_turn_log() -> list[Event]:
    return build_log(
        [
            ("turn", 0),
            ("user", 0),
            ("end", 0),
            ("turn", 0),
            ("chunks", 30),
            ("call", 1),
            ("chunks", 30),
        ]
    )


def test_sqlite_window_at_a_verified_revision_reads_only_its_rows(tmp_path, monkeypatch) -> None:
    path = write_sqlite(str(tmp_path), open_turn_log(), [7, 40])
    backend = SqliteBackend(path)
    service = service_over(backend)
    first = to_builtins(service.read_event(SID, 50, 10, 10))

    def no_full_read(*args: Any) -> Any:
        raise AssertionError("a verified revision must not be read whole")

    monkeypatch.setattr(sqlite_backend, "select_rows", no_full_read)
    assert to_builtins(service.read_event(SID, 50, 10, 10)) == first
    closers = to_builtins(service.read_event(SID, 66, 1, 5))  # the synthesized closers
    assert [e["type"] for e in closers["events"]] == ["assistant/chunk", "tool/result", "turn/end"]


def test_sqlite_append_changes_the_revision_and_the_window(tmp_path) -> None:
    events = open_turn_log()
    path = write_sqlite(str(tmp_path), events, [])
    backend = SqliteBackend(path)
    service = service_over(backend)
    before = to_builtins(service.read_event(SID, len(events), 0, 2))
    assert before["target"]["type"] == "tool/result"  # an interrupted-call closer
    writer = SqliteBackend(path)
    writer.append(
        SID,
        [
            make_event(
                "tool/result",
                len(events),
                5,
                {
                    "turn": 2,
                    "message": {
                        "id": "r",
                        "role": "user",
                        "source": {"kind": "tool", "callId": "c1"},
                        "content": [
                            {
                                "type": "tool-result",
                                "toolCallId": "c1",
                                "content": [],
                                "isError": False,
                            }
                        ],
                    },
                },
                surface_op="append",
            ),
            make_event(
                "turn/end", len(events) + 1, 6, {"turn": 2, "reason": {"kind": "completed"}}
            ),
        ],
    )
    after = to_builtins(service.read_event(SID, len(events), 0, 5))
    assert after["target"]["data"]["message"]["id"] == "r"
    assert after["endSeq"] == len(events) + 1  # no closers any more
    writer.close()


def test_sqlite_corruption_outside_the_window_is_reported_after_a_revision_change(tmp_path) -> None:
    events = build_log([("turn", 0), ("user", 0), ("end", 0)] * 40)
    path = write_sqlite(str(tmp_path), events, [])
    service = service_over(SqliteBackend(path))
    service.read_event(SID, 100, 5, 5)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE events SET data = '{bad' WHERE seq = 1")
    conn.execute("UPDATE sessions SET revision = revision + 1")  # as any writer's commit does
    conn.commit()
    conn.close()
    with pytest.raises(QueryError) as info:
        service.read_event(SID, 100, 5, 5)
    assert info.value.code == errors.CORRUPT_SESSION
    assert "invalid committed physical row at seq 1" in info.value.message


def test_sqlite_changed_rows_in_the_window_are_verified_again(tmp_path) -> None:
    """A foreign change that does not bump the revision is still caught when it meets the
    window: the rows disagree with the verified shape, so the whole log is read again."""
    events = build_log([("turn", 0), ("user", 0), ("end", 0)] * 40)
    path = write_sqlite(str(tmp_path), events, [])
    service = service_over(SqliteBackend(path))
    service.read_event(SID, 100, 5, 5)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM events WHERE seq = 100")
    conn.commit()
    conn.close()
    with pytest.raises(QueryError) as info:
        service.read_event(SID, 100, 5, 5)
    assert info.value.code == errors.CORRUPT_SESSION


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_jsonl_window_at_a_verified_revision_seeks(tmp_path, monkeypatch, compression) -> None:
    root = write_jsonl(str(tmp_path), open_turn_log(), [5, 33], compression)
    backend = JsonlBackend(root, read_only=True)
    service = service_over(backend)
    first = to_builtins(service.read_event(SID, 40, 3, 3))

    def no_full_read(*args: Any) -> Any:
        raise AssertionError("a verified revision must not be read whole")

    monkeypatch.setattr(JsonlBackend, "_stable_read", no_full_read)
    assert to_builtins(service.read_event(SID, 40, 3, 3)) == first


def test_jsonl_append_changes_the_revision(tmp_path) -> None:
    events = open_turn_log()
    root = write_jsonl(str(tmp_path), events, [], "none")
    reader = JsonlBackend(root, read_only=True)
    service = service_over(reader)
    assert to_builtins(service.read_event(SID, len(events) - 1, 0, 0))["endSeq"] == len(events) - 1
    writer = JsonlBackend(root)
    writer.append(
        SID, [make_event("turn/end", len(events), 5, {"turn": 2, "reason": {"kind": "completed"}})]
    )
    window = to_builtins(service.read_event(SID, len(events), 2, 2))
    assert window["target"]["data"]["reason"] == {"kind": "completed"}
    assert window["endSeq"] == len(events)


def test_memo_is_lru_bounded() -> None:
    memo = VerificationMemo(capacity=2)
    memo.put("a", "r1", 1)
    memo.put("b", "r1", 2)
    assert memo.get("a", "r1") == 1  # a is now the most recently used
    memo.put("c", "r1", 3)
    assert memo.get("b", "r1") is None and memo.get("a", "r1") == 1 and len(memo) == 2
    assert memo.get("a", "r2") is None  # another revision was never verified
    memo.forget("a")
    assert memo.get("a", "r1") is None


def test_outline_events_carry_no_payload_but_the_same_envelope(tmp_path) -> None:
    path = write_sqlite(str(tmp_path), open_turn_log(), [])
    backend = SqliteBackend(path)
    outline = backend.inspect_outline(SID).events
    full = backend.inspect(SID).events
    assert len(outline) == len(full)
    assert any(isinstance(e, ChunkOutline) for e in outline)
    for a, b in zip(outline, full, strict=True):
        assert (a.type, a.seq, a.time, a.surface_op, a.source_seqs) == (
            b.type,
            b.seq,
            b.time,
            b.surface_op,
            b.source_seqs,
        )
        if not isinstance(a, ChunkOutline):
            assert a.raw == b.raw


# ---------------------------------------------------------------------------------------------
# the service side of inspect_window: cancellation and contract shapes


class WindowBackend:
    """A backend with inspect_window whose calls can fire the token and still settle."""

    uri = "test:window"
    writable = False
    cheap_windows = (
        False  # a WindowReader (persistence/contract/capabilities.py) whose windows are not cheap
    )

    def __init__(self, cancel_during: str | None = None) -> None:
        self.cancel_during = cancel_during
        self.calls: list[str] = []
        self.events = build_log([("turn", 0), ("user", 0), ("end", 0)])

    def list(self, token: CancelToken | None = None) -> list[Header]:
        self.calls.append("list")
        return [window_header()]

    def list_snapshots(self, token: CancelToken | None = None) -> Any:
        return []

    def inspect(self, session_id: str, token: CancelToken | None = None) -> Inspection:
        self.calls.append("inspect")
        return Inspection(window_header(), list(self.events))

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken | None = None
    ) -> Window:
        self.calls.append("inspect_window")
        if self.cancel_during == "inspect_window" and token is not None:
            token.cancel()  # fires mid-call; the call still settles normally
        return Window(window_header(), len(self.events), first, self.events[first : last + 1])


def test_read_event_uses_inspect_window_and_honours_cancellation() -> None:
    backend = WindowBackend()
    service = service_over(backend)
    window = to_builtins(service.read_event(SID, 1, 5, 5))
    assert (window["startSeq"], window["endSeq"]) == (0, 2)
    assert backend.calls == ["list", "inspect_window"]
    backend = WindowBackend(cancel_during="inspect_window")
    service = service_over(backend)
    token = CancelToken()
    with pytest.raises(QueryError) as info:
        service.read_event(SID, 1, 5, 5, token)
    assert info.value.code == errors.ABORTED
    assert backend.calls == ["list", "inspect_window"]
    token = CancelToken()
    token.cancel()
    backend.calls.clear()
    with pytest.raises(QueryError) as info:
        service.read_event(SID, 1, 5, 5, token)
    assert info.value.code == errors.ABORTED and backend.calls == []


def test_a_window_that_is_not_a_window_is_a_persistence_failure() -> None:
    backend = WindowBackend()
    backend.inspect_window = lambda *args: {"meta": {}, "events": []}  # type: ignore[method-assign]
    with pytest.raises(QueryError) as info:
        service_over(backend).read_event(SID, 0)
    assert info.value.code == errors.PERSISTENCE_FAILED
    assert info.value.message.startswith(f'failed to inspect session "{SID}"')


def test_sqlite_window_errors_match_inspect_for_format_and_missing_sessions(tmp_path) -> None:
    path = write_sqlite(str(tmp_path), open_turn_log(), [])
    fast, full = service_over(SqliteBackend(path)), service_over(InspectOnly(SqliteBackend(path)))
    fast.read_event(SID, 3, 1, 1)  # verified: the memo holds this revision
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sessions SET version = 1")
    conn.commit()
    conn.close()
    refused = outcome(fast.read_event, SID, 3, 1, 1)
    assert refused == outcome(full.read_event, SID, 3, 1, 1)
    assert refused[1] == errors.PERSISTENCE_FAILED and "uses log format v1" in refused[2]
    assert outcome(fast.read_event, "nobody", 0) == outcome(full.read_event, "nobody", 0)
    assert outcome(fast.read_event, "nobody", 0)[1] == errors.SESSION_NOT_FOUND


def test_window_header_is_checked_against_the_listing() -> None:
    backend = WindowBackend()
    listed = Header.build(
        version=0, id=SID, createdAt=1_700_000_000_000, cwd="/elsewhere", delegationDepth=0
    )
    backend.list = lambda token=None: [listed]
    with pytest.raises(QueryError) as info:
        service_over(backend).read_event(SID, 0)
    assert info.value.code == errors.SOURCE_CONFLICT


def test_sqlite_torn_rows_overlapping_the_prefix_stay_out_of_windows(tmp_path) -> None:
    """A torn-tail row whose seq falls inside the prefix (a packed row already covers it) is not
    part of the log: a window read must not take it for the row holding that seq."""
    path = write_sqlite(str(tmp_path), [chunk(seq, 1) for seq in range(5)], [])
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO events (session_id, seq, type, time, data) VALUES"
        " ('s', 4, 'plugin/note', 4, '{}')"
    )
    conn.execute("UPDATE sessions SET revision = revision + 1")
    conn.commit()
    conn.close()
    fast, full = service_over(SqliteBackend(path)), service_over(InspectOnly(SqliteBackend(path)))
    for _ in range(2):  # verify, then read through the memo
        for seq in range(6):
            assert outcome(fast.read_event, SID, seq, 0, 0) == outcome(
                full.read_event, SID, seq, 0, 0
            )
    assert to_builtins(fast.read_event(SID, 4))["target"]["type"] == "assistant/chunk"


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]},
        {"turn": 1.5, "step": -1, "index": 0, "dt": [0, -5], "texts": ["a", "b", "c"]},
        {"turn": 1, "step": 1, "index": 0, "dt": [1.0, 2], "texts": ["a", "b", "c"]},  # float dt
        {"turn": True, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]},
        {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b", "c"]},
        {"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]},  # too few for sqlite
        {"turn": 1, "step": 1, "index": 0, "dt": [2**53, 0], "texts": ["a", "b", "c"]},
        {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"], "x": 1},
        {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "id": "c", "args": ["a", "b", "c"]},
        {
            "turn": 1,
            "step": 1,
            "index": 0,
            "dt": [1, 2],
            "id": "c",
            "name": None,
            "args": ["a", "b", "c"],
        },
        {
            "turn": 1,
            "step": 1,
            "index": 0,
            "dt": [1, 2],
            "id": "c",
            "name": "n",
            "args": ["a", "b", "c"],
        },
    ],
)
@pytest.mark.parametrize("tag", ["text-chunks", "tool-call-chunks"])
@pytest.mark.parametrize("time0", [0, 2**53 - 2])
def test_the_outline_fast_path_agrees_with_row_validation(data, tag, time0) -> None:
    from dsh_query_server import jsoncodec

    fast = records.outline_members(tag, 7, time0, jsoncodec.dumps(data), sqlite=True)
    try:
        exact = records.unpack_row(
            {"type": tag, "seq0": 7, "time0": time0, "data": data}, sqlite=True, outline=True
        )
    except records.MalformedRow:
        assert fast is None
    else:
        assert fast is None or fast == exact


# ---------------------------------------------------------------------------------------------
# streamed verification: the first window read keeps only the window and the memo's facts

# Plans without the malformed steps (which end most generated logs in a normalization error)
# and without legacy replaces (each sends the streamed pass back to a whole read; the property
# tests above cover that), so the streamed closers and seq bookkeeping get exercised.
GOOD_STEP = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                "turn",
                "end",
                "user",
                "turn",
                "user",
                "step",
                "stepend",
                "call",
                "call",
                "legacy-user",
                "legacy-steering",
                "title",
            ]
        ),
        st.integers(1, 3),
    ),
    st.tuples(st.just("chunks"), st.integers(1, 40)),
)
GOOD_LOG = st.lists(GOOD_STEP, max_size=30)


@PROPERTY
@given(GOOD_LOG, CUTS, DEFECT, PROBES, st.integers(1, 4))
def test_streamed_sqlite_verification_equals_the_full_inspect_path(
    monkeypatch, plan, cuts, defect, probes, fold
) -> None:
    monkeypatch.setattr(closers, "_FOLD_EVERY", fold)  # fold the open turn's events often
    compare_sqlite(plan, cuts, defect, probes)


@PROPERTY
@given(GOOD_LOG, CUTS, DEFECT, PROBES, st.integers(1, 4))
def test_streamed_raw_jsonl_verification_equals_the_full_inspect_path(
    monkeypatch, plan, cuts, defect, probes, fold
) -> None:
    monkeypatch.setattr(closers, "_FOLD_EVERY", fold)
    monkeypatch.setattr(jsonl_decode, "MARK_EVERY", 3)
    events = build_log(plan)
    if not events:
        return
    with tempfile.TemporaryDirectory() as directory:
        root = write_jsonl(directory, events, cuts, "none")
        damage_raw(root, defect)
        fast, full = JsonlBackend(root, read_only=True), JsonlBackend(root, read_only=True)
        same_answers(service_over(fast), service_over(InspectOnly(full)), len(events), probes)


def test_the_first_window_read_does_not_hold_the_whole_log(tmp_path, monkeypatch) -> None:
    events = open_turn_log()
    path = write_sqlite(str(tmp_path), events, [9])
    root = write_jsonl(str(tmp_path), events, [9], "none")
    expected = [
        to_builtins(service_over(InspectOnly(backend)).read_event(SID, 60, 3, 10))
        for backend in (SqliteBackend(path), JsonlBackend(root, read_only=True))
    ]

    def whole(*args: Any) -> Any:
        raise AssertionError("a current-form log must be verified streamed")

    monkeypatch.setattr(sqlite_backend, "committed_prefix", whole)
    monkeypatch.setattr(logical, "verified_log", whole)
    # (the jsonl backend and persistence/logical/windows.py call logical.verified_log, patched above)
    found = [
        to_builtins(service_over(backend).read_event(SID, 60, 3, 10))
        for backend in (SqliteBackend(path), JsonlBackend(root, read_only=True))
    ]
    assert found == expected
    assert [e["type"] for e in found[0]["events"]][-2:] == ["tool/result", "turn/end"]


@pytest.mark.parametrize("damage", ["committed", "torn"])
def test_streamed_verification_reports_storage_defects_before_legacy_ones(tmp_path, damage) -> None:
    """``inspect`` decodes the whole prefix before it normalizes: a committed storage defect
    after a malformed legacy event wins; a torn tail leaves the legacy error to be reported."""
    events = build_log(
        [
            ("turn", 0),
            ("bad-legacy", 0),
            ("user", 0),
            ("end", 0),
            ("turn", 0),
            ("user", 0),
            ("end", 0),
            ("turn", 0),
            ("user", 0),
        ]
    )
    path = write_sqlite(str(tmp_path), events, [])
    damage_sqlite(path, ("bad", 5) if damage == "committed" else ("torn", 0))
    fast, full = service_over(SqliteBackend(path)), service_over(InspectOnly(SqliteBackend(path)))
    answer = outcome(fast.read_event, SID, 0, 0, 0)
    assert answer == outcome(full.read_event, SID, 0, 0, 0)
    assert answer[0] == "error" and answer[1] == errors.CORRUPT_SESSION
    if damage == "committed":
        assert "invalid committed physical row at seq 5" in answer[2]
    else:
        assert "malformed pre-react-loop turn/start at seq 1" in answer[2]


@pytest.mark.parametrize("fold", [1, 2, 256])
def test_streamed_closers_hold_a_scan_failure_only_for_the_open_turn(monkeypatch, fold) -> None:
    """The closer scan of a streamed pass may observe events of turns that then end; a failure
    there must surface only when ``closers`` (which scans the last open turn) would meet it.
    (Only the types in _TURN_STATE_TYPES reach the scan: observe() ignores every other.)"""
    monkeypatch.setattr(closers, "_FOLD_EVERY", fold)
    events = build_log(
        [
            ("turn", 0),
            ("call", 1),
            ("step", 1),
            ("end", 0),
            ("turn", 0),
            ("step", 1),
            ("call", 2),
            ("call", 3),
            ("chunks", 4),
        ]
    )
    observe = closers._TurnState.observe

    for failing in range(len(events)):

        def flaky(self: Any, event: Event, failing: int = failing) -> None:
            if event.seq == failing and event.type in closers._TURN_STATE_TYPES:
                raise ValueError(f"scan failed at {failing}")
            observe(self, event)

        monkeypatch.setattr(closers._TurnState, "observe", flaky)
        try:
            full: Any = logical.verified_log(SID, events)
        except ValueError as exc:
            full = str(exc)
        streamed = logical.StreamedLog(SID, 0, 100)
        streamed.extend(events)
        try:
            fast: Any = streamed.finish()
        except ValueError as exc:
            fast = str(exc)
        assert fast == full, failing


def test_a_legacy_replace_sends_the_streamed_verification_to_a_whole_read(tmp_path) -> None:
    events = build_log(
        [
            ("turn", 0),
            ("legacy-user", 0),
            ("chunks", 5),
            ("legacy-result", 1),
            ("end", 0),
            ("turn", 0),
            ("legacy-result", 3),
            ("chunks", 4),
        ]
    )
    path = write_sqlite(str(tmp_path), events, [4])
    root = write_jsonl(str(tmp_path), events, [4], "none")
    for fast, full in [
        (SqliteBackend(path), SqliteBackend(path)),
        (JsonlBackend(root, read_only=True), JsonlBackend(root, read_only=True)),
    ]:
        same_answers(
            service_over(fast),
            service_over(InspectOnly(full)),
            len(events),
            [(7, 2, 2), (13, 0, 5)],
        )
        replaced = to_builtins(service_over(fast).read_event(SID, 7))["target"]
        assert replaced["data"]["message"]["id"] == f"legacy-message:{SID}:1"


# ---------------------------------------------------------------------------------------------
# the index build reads long logs window by window (search/documents.py)

from dsh_query_server.persistence.reads import LogMoved  # noqa: E402
from dsh_query_server.search import documents as search_documents  # noqa: E402


def read_outcome(backend: Any) -> Any:
    """What the index would write for the log, or the error it would meet."""
    try:
        read = search_documents.read_persisted(
            PersistenceBinding().mount(backend).logs, SID, CancelToken()
        )
        docs = list(read)
        read.raise_error()
        return ("ok", read.meta.raw, docs)
    except QueryError as exc:
        return ("query-error", exc.code, exc.message)
    except Exception as exc:  # noqa: BLE001 - the backend's own error, compared by type and text
        return ("error", type(exc).__name__, str(exc))


@PROPERTY
@given(LOG, CUTS, DEFECT, st.sampled_from(["sqlite", "none", "zstd"]), st.integers(1, 7))
def test_windowed_index_documents_equal_the_whole_log(
    monkeypatch, plan, cuts, defect, store, window
) -> None:
    monkeypatch.setattr(search_documents, "WINDOW", window)
    events = build_log(plan)
    if not events:
        return
    with tempfile.TemporaryDirectory() as directory:
        if store == "sqlite":
            path = write_sqlite(directory, events, cuts)
            damage_sqlite(path, defect)
            fast, full = SqliteBackend(path), SqliteBackend(path)
        else:
            root = write_jsonl(directory, events, cuts, store)
            (damage_raw if store == "none" else damage_zstd)(root, defect)
            fast, full = JsonlBackend(root, read_only=True), JsonlBackend(root, read_only=True)
        fast.list_snapshots()  # the encoding is known, as in a reconcile
        expected = read_outcome(InspectOnly(full))
        assert read_outcome(fast) == expected
        assert read_outcome(fast) == expected  # again, through the memo


def test_a_log_that_grows_between_windows_is_retried(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(search_documents, "WINDOW", 4)
    monkeypatch.setattr(search_documents, "TEXT_BUDGET", 0)  # texts not kept: a second pass
    events = build_log([("turn", 0), ("user", 0), ("chunks", 20), ("end", 0)])
    path = write_sqlite(str(tmp_path), events, [])
    backend = SqliteBackend(path)
    read = search_documents.read_persisted(
        PersistenceBinding().mount(backend).logs, SID, CancelToken()
    )  # the fold pass is done
    writer = SqliteBackend(path)
    writer.append(SID, [make_event("turn/start", len(events), 0, {"turn": 2})])
    writer.close()
    assert list(read) == []  # the first window of the second pass sees the new length
    with pytest.raises(LogMoved):
        read.raise_error()
