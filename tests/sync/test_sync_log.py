"""What ``dsh-query sync`` copies of a session (sync/log.py): a ``jsonl:`` source's stored
prefix as pieces, where each canonical packed line stands for its members (postgres.md §6).

Properties against the events that ``read_stored`` gives for the same transcript: the pieces,
any head and tail of them, and the batches hold exactly those events in order; batches are cut
where the events alone would be cut, and keep whole every line that no cut crosses; the digest of
a head is the digest of that head as a log of its own, and tells apart logs whose events differ. And on hand-written transcripts (a
kept line after a gap, proven or not, a torn tail), reading by pieces accepts and refuses exactly
what ``read_stored`` does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.logical.records import KeptLine, Piece
from dsh_query_server.persistence.postgres import rows
from dsh_query_server.sync import group as sync_group
from dsh_query_server.sync.log import SourceLog, count_of


def chunk(seq: int, kind: str, text: str) -> Event:
    data = {"turn": 1, "step": 1, "chunk": {"type": f"{kind}-delta", "index": 0, "text": text}}
    return make_event("assistant/chunk", seq, 10 * seq, data)


@st.composite
def logs(draw: st.DrawFn) -> list[Event]:
    """Runs of chunks (packed by the JSONL writer when 3 or more) between notes."""
    events: list[Event] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["text", "reasoning", "note"]))
        for _ in range(draw(st.integers(1, 12))):
            seq = len(events)
            text = draw(st.sampled_from(["x", "é", '"q"', "long " * 5]))
            if kind == "note":
                events.append(make_event("x/note", seq, seq, {"text": text}))
            else:
                events.append(chunk(seq, kind, text))
    return events


def stored(events: list[Event], compression: str) -> tuple[SourceLog, list[bytes]]:
    """The session written by the JSONL backend, read as pieces and as events."""
    root = Path(tempfile.mkdtemp(prefix="sync-log-")) / "root"
    jsonl = JsonlBackend(str(root), compression=compression)
    try:
        jsonl.create(Header.build(version=0, id="s", createdAt=1, cwd="/p"))
        jsonl.append("s", events)  # materializes the session (logs are never empty)
        log = SourceLog.of(*jsonl.read_stored_pieces("s"))
        raws = [e.raw for e in jsonl.read_stored("s").events]
    finally:
        jsonl.close()
    return log, raws


def _kind(event: Event) -> str:
    return str(event.data()["chunk"]["type"]) if event.type == "assistant/chunk" else ""


def raws_of(pieces: Sequence[Piece]) -> list[bytes]:
    return [e.raw for e in rows.events_of(pieces)]


@settings(max_examples=60, deadline=None)
@given(events=logs(), compression=st.sampled_from(["none", "zstd"]), data=st.data())
def test_pieces_heads_and_tails_hold_the_stored_events(
    events: list[Event], compression: str, data: st.DataObject
) -> None:
    log, raws = stored(events, compression)
    assert raws == [e.raw for e in events]
    assert raws_of(list(log.pieces)) == raws and log.count == len(raws)
    # the writer packs a run of 3 or more chunks of one kind, and each such line is kept whole
    packable = any(
        len({e.type, f.type, g.type} | {_kind(e), _kind(f), _kind(g)}) == 2
        and e.type == "assistant/chunk"
        for e, f, g in zip(events, events[1:], events[2:], strict=False)
    )
    assert packable == any(isinstance(p, KeptLine) for p in log.pieces)
    at = data.draw(st.integers(0, len(raws) + 2))
    assert raws_of(log.head(at)) == raws[:at]
    assert raws_of(log.tail(at)) == raws[at:]
    assert count_of(log.head(at)) == min(at, len(raws))
    # the digest of a head is that head's own digest, whatever pieces the rest is in
    assert log.digest(at) == SourceLog.of(log.header, log.head(at)).digest()
    plain = SourceLog(log.header, rows.events_of(log.pieces), log.count)
    if not any(isinstance(p, KeptLine) for p in log.head(at)):
        assert log.digest(at) == plain.digest(at)


@settings(max_examples=60, deadline=None)
@given(events=logs(), limit=st.integers(1, 14))
def test_batches_cut_where_the_events_are_cut_and_keep_uncut_lines_whole(
    events: list[Event], limit: int
) -> None:
    log, raws = stored(events, "none")
    saved = sync_group.MAX_BATCH_EVENTS
    sync_group.MAX_BATCH_EVENTS = limit
    try:
        cut = sync_group.batches(log.pieces)
        plain = sync_group.batches(rows.events_of(log.pieces))
    finally:
        sync_group.MAX_BATCH_EVENTS = saved
    assert [raws_of(batch) for batch in cut] == [raws_of(batch) for batch in plain]
    whole = {id(p) for batch in cut for p in batch if isinstance(p, KeptLine)}
    for piece in log.pieces:
        if isinstance(piece, KeptLine):
            first, last = piece.start, piece.start + piece.members - 1
            uncut = first // limit == last // limit
            assert (id(piece) in whole) == uncut
    for batch in cut:  # each batch is contiguous and its records read back as its events
        first = rows.batch_start("s", batch)
        assert first == (batch[0].start if isinstance(batch[0], KeptLine) else batch[0].seq)


@settings(max_examples=40, deadline=None)
@given(events=logs(), other=logs())
def test_digests_differ_where_the_events_differ(events: list[Event], other: list[Event]) -> None:
    a, raws_a = stored(events, "none")
    b, raws_b = stored(other, "none")
    assert (a.digest() == b.digest()) == (raws_a == raws_b)


ROW = b'{"type":"text-chunks","seq0":%d,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}'
NOTE = b'{"type":"x/note","seq":%d,"time":0,"data":{}}'
TURN_END = b'{"type":"turn/end","seq":%d,"time":0,"data":{"turn":1}}'


@pytest.mark.parametrize(
    "lines",
    [
        [NOTE % 0, ROW % 1, NOTE % 4],  # a kept line where it belongs
        [NOTE % 0, ROW % 5, NOTE % 8],  # a kept line after a gap: the prefix ends before it
        [NOTE % 0, ROW % 5, TURN_END % 8],  # ... and a committed turn/end proves the defect
        [ROW % 0, ROW % 3, NOTE % 9, TURN_END % 7],  # a scalar line after a gap
        [ROW % 0, b"{not json", TURN_END % 4],
        [ROW % 0, ROW % 3, b'{"type":"x/note","seq":6'],  # a torn tail
    ],
)
def test_a_read_by_pieces_accepts_and_refuses_what_read_stored_does(
    tmp_path: Path, lines: list[bytes]
) -> None:
    root = tmp_path / "root"
    jsonl = JsonlBackend(str(root), compression="none")
    jsonl.create(Header.build(version=0, id="s", createdAt=1, cwd="/p"))
    jsonl.append("s", [make_event("x/note", 0, 0, {})])  # materializes the transcript
    jsonl.close()
    path = next(root.glob("*/s/session.jsonl"))
    head = path.read_bytes().split(b"\n")[0]
    path.write_bytes(b"\n".join([head, *lines]) + (b"" if lines[-1].endswith(b"6") else b"\n"))

    def outcome(read: Callable[[JsonlBackend], list[bytes]]) -> tuple[str, object]:
        reader = JsonlBackend(str(root))
        try:
            return "events", read(reader)
        except Exception as exc:  # noqa: BLE001 - the refusal is what is compared
            return type(exc).__name__, str(exc)
        finally:
            reader.close()

    by_events = outcome(lambda b: [e.raw for e in b.read_stored("s").events])
    by_pieces = outcome(lambda b: raws_of(b.read_stored_pieces("s")[1]))
    assert by_pieces == by_events
