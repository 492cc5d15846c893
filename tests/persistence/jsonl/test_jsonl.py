"""The jsonl: backend (persistence.md §4)."""

from __future__ import annotations

import inspect as pyinspect
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.contract.backend import PersistenceBackend
from dsh_query_server.persistence.contract.errors import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
)
from dsh_query_server.persistence.jsonl import (
    JsonlBackend,
    JsonlBackendError,
    RollbackError,
    escape_segment,
    header_line,
    project_dir,
)
from dsh_query_server.persistence.logical.closers import OUTCOME_UNKNOWN_TEXT
from tests.builders import EPOCH_MS, header

REPO = Path(__file__).resolve().parents[3]

# ---------------------------------------------------------------------------------------------
# helpers

SID = "demo-1"
# Headers in /home/ana/proj (cwd=None: none) created at EPOCH_MS.
hdr = partial(header, created=EPOCH_MS, cwd="/home/ana/proj")


def line(value: Any) -> bytes:
    return jsoncodec.dumps(value) + b"\n"


def header_value(
    session_id: str = "demo-1", cwd: str | None = "/home/ana/proj", **extra: Any
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": 1700000000000,
    }
    if cwd is not None:
        value["cwd"] = cwd
    value["delegationDepth"] = 0
    value.update(extra)
    return value


def ev(kind: str, seq: int, data: Any = None, time: int = 0, **kw: Any) -> Event:
    return make_event(kind, seq, time, {} if data is None else data, **kw)


def ev_line(kind: str, seq: int, data: Any = None, time: int = 0) -> bytes:
    return line({"type": kind, "seq": seq, "time": time, "data": {} if data is None else data})


def transcript_path(
    root: Path, session_id: str = "demo-1", cwd: str | None = "/home/ana/proj", zstd: bool = False
) -> Path:
    name = "session.jsonl.zstd" if zstd else "session.jsonl"
    return root / project_dir(cwd) / escape_segment(session_id) / name


def put(path: Path, content: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def put_raw(
    root: Path,
    *lines: bytes,
    session_id: str = "demo-1",
    cwd: str | None = "/home/ana/proj",
    header: dict[str, Any] | None = None,
) -> Path:
    head = line(header if header is not None else header_value(session_id, cwd))
    return put(transcript_path(root, session_id, cwd), head + b"".join(lines))


def frame(plain: bytes, *, checksum: bool = True, content_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(
        level=3, write_checksum=checksum, write_content_size=content_size
    ).compress(plain)


def put_zstd(
    root: Path, *frames: bytes, session_id: str = "demo-1", cwd: str | None = "/home/ana/proj"
) -> Path:
    return put(transcript_path(root, session_id, cwd, zstd=True), b"".join(frames))


def values(events: list[Event]) -> list[Any]:
    return [e.to_value() for e in events]


def files_under(path: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(path) for f in fs]


def seqs(events: list[Event]) -> list[int]:
    return [e.seq for e in events]


# ---------------------------------------------------------------------------------------------
# §4.2 / §4.3 tables


@pytest.mark.parametrize(
    "cwd,expected",
    [
        ("/home/ana/proj", "--home-ana-proj--"),
        ("/a/b-c", "--a-b-c--"),
        ("/a-b/c", "--a-b-c--"),
        ("C:\\work\\agent", "--C-work-agent--"),
        ("/开发/~agent", "--~5F00~53D1-~007Eagent--"),
        ("/", "--root--"),
        (None, "_no-cwd"),
        ("//a::\\b/", "--a-b---"),
        ("/😀", "--~D83D~DE00--"),
    ],
)
def test_project_directory_key(cwd: str | None, expected: str) -> None:
    assert project_dir(cwd) == expected


def test_project_key_is_at_most_255_characters() -> None:
    key = project_dir("/" + "x" * 1000)
    assert len(key) == 255 and key == "--" + "x" * 251 + "--"
    assert len(project_dir("/" + "开" * 100)) == 255


def test_empty_cwd_and_id_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="^cannot encode an empty project path$"):
        project_dir("")
    with pytest.raises(ValueError, match="^cannot encode an empty path segment$"):
        escape_segment("")


@pytest.mark.parametrize(
    "session_id,segment",
    [
        ("plain-ID_1.2", "plain-ID_1.2"),
        ("a/b", "a~002Fb"),
        ("/etc/passwd", "~002Fetc~002Fpasswd"),
        ("a~b", "a~007Eb"),
        ("a\x00b", "a~0000b"),
        ("\ud800", "~D800"),
        ("\udc00", "~DC00"),
        ("😀", "~D83D~DE00"),
        ("~002F", "~007E002F"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("...", "..."),
    ],
)
def test_session_id_escaping(session_id: str, segment: str) -> None:
    assert escape_segment(session_id) == segment


# ---------------------------------------------------------------------------------------------
# §4.4 header line


def test_header_line_key_order_and_default_depth() -> None:
    header = Header.build(
        version=0,
        id="x",
        createdAt=5,
        cwd="/c",
        parentSession="p",
        seedLength=2,
        origin="subagent",
        agentPreset="a",
    )
    assert header_line(header) == (
        b'{"type":"session","version":0,"id":"x","createdAt":5,"cwd":"/c","parentSession":"p",'
        b'"seedLength":2,"origin":"subagent","delegationDepth":0,"agentPreset":"a"}\n'
    )
    assert header_line(Header.build(version=0, id="x", createdAt=5, delegationDepth=3)) == (
        b'{"type":"session","version":0,"id":"x","createdAt":5,"delegationDepth":3}\n'
    )


@pytest.mark.parametrize(
    "first_line",
    [
        b'{"type":"session","version":0,"id":"demo-1","createdAt":-0,"cwd":"/home/ana/proj",'
        b'"delegationDepth":0}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"cwd":"/home/ana/proj",'
        b'"delegationDepth":-0}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"cwd":"/home/ana/proj",'
        b'"delegationDepth":-0.0}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"cwd":"/home/ana/proj"}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1.5,"delegationDepth":0,'
        b'"cwd":"/home/ana/proj"}',
        b'{"type":"session","version":"0","id":"demo-1","createdAt":1,"delegationDepth":0,'
        b'"cwd":"/home/ana/proj"}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"delegationDepth":0,'
        b'"cwd":"/home/ana/proj","origin":"user"}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"delegationDepth":0,'
        b'"cwd":"/home/ana/proj","seedLength":true}',
        b'{"type":"session","version":0,"id":"demo-1","createdAt":1,"delegationDepth":0,'
        b'"cwd":null}',
        b'{"type":"event","version":0,"id":"demo-1","createdAt":1,"delegationDepth":0}',
        b"[1]",
    ],
)
def test_invalid_header_lines(tmp_path: Path, first_line: bytes) -> None:
    put(transcript_path(tmp_path), first_line + b"\n")
    backend = JsonlBackend(str(tmp_path))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        backend.inspect("demo-1")
    assert str(info.value) == "corrupt session log: first line is not a session header"
    assert backend.list() == []


def test_header_not_json_and_headerless(tmp_path: Path) -> None:
    path = put(transcript_path(tmp_path), b'{"type":"session"\n')
    backend = JsonlBackend(str(tmp_path))
    with pytest.raises(
        SessionPersistenceCorruptionError,
        match="^corrupt session log: header line is not valid JSON$",
    ):
        backend.inspect("demo-1")
    for content in (b"", line(header_value())[:-1]):
        path.write_bytes(content)
        with pytest.raises(
            SessionPersistenceCorruptionError, match="^empty or header-less session log$"
        ):
            backend.inspect("demo-1")
        assert backend.list() == []


def test_retired_header_keys(tmp_path: Path) -> None:
    put_raw(tmp_path, header=header_value(sandboxMode="x"))
    backend = JsonlBackend(str(tmp_path))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        backend.inspect("demo-1")
    assert str(info.value) == "session header uses retired policy baseline fields"
    assert backend.list() == []


def test_header_keeps_only_known_fields(tmp_path: Path) -> None:
    put_raw(tmp_path, header=header_value(extra=1, agentPreset="p", delegationDepth=2))
    [header] = JsonlBackend(str(tmp_path)).list()
    assert header.to_value() == {
        "version": 0,
        "id": "demo-1",
        "createdAt": 1700000000000,
        "cwd": "/home/ana/proj",
        "delegationDepth": 2,
        "agentPreset": "p",
    }


@pytest.mark.parametrize(
    "version,message",
    [
        (
            1,
            'session "demo-1" uses log format v1, but this harness reads only v0: the log was '
            "written by a newer harness — upgrade the harness to open it",
        ),
        (
            -2,
            'session "demo-1" uses log format v-2, older than the supported v0, and this build '
            "ships no upgrade path for it",
        ),
    ],
)
def test_format_refusal(tmp_path: Path, version: int, message: str) -> None:
    path = put_raw(tmp_path, header=header_value(version=version))
    backend = JsonlBackend(str(tmp_path))
    with pytest.raises(SessionFormatUnsupportedError) as info:
        backend.inspect("demo-1")
    assert str(info.value) == f"{message} (raw log: {path})"
    assert [h.version for h in backend.list()] == [version]  # listing does not refuse


def test_header_with_huge_numbers_in_unknown_keys(tmp_path: Path) -> None:
    put(transcript_path(tmp_path), line(header_value())[:-2] + b',"extra":' + b"9" * 5000 + b"}\n")
    assert [h.id for h in JsonlBackend(str(tmp_path)).list()] == ["demo-1"]


def test_format_refusal_comes_before_shape_check(tmp_path: Path) -> None:
    put(transcript_path(tmp_path), b'{"version":3,"id":123}\n')
    with pytest.raises(SessionFormatUnsupportedError, match='^session "123" uses log format v3'):
        JsonlBackend(str(tmp_path)).inspect("demo-1")


def test_invalid_utf8_is_replaced_not_a_defect(tmp_path: Path) -> None:
    put_raw(tmp_path, b'{"type":"x","seq":0,"time":0,"data":"a\xffb"}\n')
    [event] = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    assert event.data() == "a\ufffdb"


# ---------------------------------------------------------------------------------------------
# §4.5 raw reading examples


def inspect_raw(root: Path, *lines: bytes) -> tuple[list[int], bool]:
    put_raw(root, *lines)
    backend = JsonlBackend(str(root))
    stored = backend.read_stored("demo-1")
    return seqs(stored.events), stored.torn


def test_raw_example_gap_without_turn_end_is_torn(tmp_path: Path) -> None:
    assert inspect_raw(
        tmp_path, ev_line("turn/start", 0, {"turn": 1}), ev_line("step/start", 2)
    ) == ([0], True)
    events = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    assert [(e.type, e.seq) for e in events] == [("turn/start", 0), ("turn/end", 1)]


def test_raw_example_gap_before_turn_end_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        inspect_raw(
            tmp_path, ev_line("turn/start", 0), ev_line("step/start", 2), ev_line("turn/end", 3)
        )
    assert str(info.value) == (
        "corrupt session log: seq gap in committed region at line 2 (expected 1, got 2)"
    )


def test_raw_example_unparsable_before_turn_end_is_corrupt(tmp_path: Path) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        inspect_raw(tmp_path, b"{not json\n", ev_line("turn/end", 1))
    assert str(info.value) == "corrupt session log: unparsable committed event at line 1"


def test_raw_example_defect_after_turn_end_is_torn(tmp_path: Path) -> None:
    assert inspect_raw(
        tmp_path, ev_line("turn/start", 0), ev_line("turn/end", 1), ev_line("step/start", 9)
    ) == ([0, 1], True)


def test_raw_example_unparsable_tail_is_torn(tmp_path: Path) -> None:
    assert inspect_raw(tmp_path, ev_line("turn/start", 0), b"{not json\n") == ([0], True)


def test_raw_example_header_only(tmp_path: Path) -> None:
    assert inspect_raw(tmp_path) == ([], False)


def test_raw_example_nothing_after_defect_is_accepted(tmp_path: Path) -> None:
    assert inspect_raw(
        tmp_path, ev_line("turn/start", 0), b"{not json\n", ev_line("step/start", 1)
    ) == ([0], True)


def test_defective_line_that_is_a_turn_end_is_committed(tmp_path: Path) -> None:
    with pytest.raises(SessionPersistenceCorruptionError, match=r"line 2 \(expected 1, got 5\)"):
        inspect_raw(tmp_path, ev_line("turn/start", 0), ev_line("turn/end", 5))


def test_unparsable_lines_are_skipped_when_searching_for_turn_end(tmp_path: Path) -> None:
    with pytest.raises(SessionPersistenceCorruptionError, match="unparsable committed event"):
        inspect_raw(tmp_path, ev_line("turn/start", 0), b"\n", b"garbage\n", ev_line("turn/end", 7))


@pytest.mark.parametrize(
    "bad,got",
    [
        (b"[1,2]\n", "non-object"),
        (b'{"type":"x","time":0,"data":{}}\n', "missing"),
        (b'{"type":"x","seq":"1","time":0,"data":{}}\n', '"1"'),
        (b'{"type":"x","seq":true,"time":0,"data":{}}\n', "true"),
    ],
)
def test_seq_gap_renderings(tmp_path: Path, bad: bytes, got: str) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        inspect_raw(tmp_path, ev_line("turn/start", 0), bad, ev_line("turn/end", 2))
    assert str(info.value).endswith(f"(expected 1, got {got})")


def test_malformed_packed_row_is_unparsable(tmp_path: Path) -> None:
    bad = line({"type": "text-chunks", "seq0": 1, "time0": 0, "data": {"turn": 1}})
    assert inspect_raw(tmp_path, ev_line("turn/start", 0), bad) == ([0], True)
    with pytest.raises(
        SessionPersistenceCorruptionError, match="unparsable committed event at line 2"
    ):
        inspect_raw(tmp_path, ev_line("turn/start", 0), bad, ev_line("turn/end", 5))


def test_torn_fragment_is_ignored(tmp_path: Path) -> None:
    assert inspect_raw(tmp_path, ev_line("turn/start", 0), b'{"type":"turn/end","seq":1') == (
        [0],
        True,
    )


def test_mixed_packed_and_unpacked_lines_read_alike(tmp_path: Path) -> None:
    chunks = [
        ev(
            "assistant/chunk",
            i,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": str(i)}},
            time=i,
        )
        for i in range(4)
    ]
    row = line(
        {
            "type": "text-chunks",
            "seq0": 1,
            "time0": 1,
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["1", "2", "3"]},
        }
    )
    put_raw(tmp_path, chunks[0].raw + b"\n", row)
    assert values(JsonlBackend(str(tmp_path)).inspect("demo-1").events) == values(chunks)


def test_only_line_feed_splits_lines(tmp_path: Path) -> None:
    text = "a\u2028b\u2029c\u0085d\re"
    put_raw(tmp_path, line({"type": "x", "seq": 0, "time": 0, "data": text}))
    [event] = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    assert event.data() == text


# ---------------------------------------------------------------------------------------------
# §4.13 worked example

WORKED_LINES = [
    b'{"type":"turn/start","seq":0,"time":1700000000100,"data":{"turn":1}}\n',
    b'{"type":"user/message","seq":1,"time":1700000000200,"data":{"id":"m-1","role":"user",'
    b'"content":[{"type":"text","text":"Find the needle"}],"source":{"kind":"user"}},'
    b'"surfaceOp":"append"}\n',
    b'{"type":"assistant/message","seq":2,"time":1700000000300,"data":{"turn":1,"step":1,'
    b'"message":{"id":"m-2","role":"assistant","content":[{"type":"text","text":"Here it is."}],'
    b'"source":{"kind":"model","provider":"deepseek","model":"deepseek-chat"}}},'
    b'"surfaceOp":"append","sourceEventSeqs":[1]}\n',
    b'{"type":"turn/end","seq":3,"time":1700000000400,"data":{"turn":1,'
    b'"reason":{"kind":"completed"}}}\n',
]
WORKED_HEADER = (
    b'{"type":"session","version":0,"id":"demo-1","createdAt":1700000000000,'
    b'"cwd":"/home/ana/proj","delegationDepth":0}\n'
)


@pytest.mark.parametrize("compression", ["auto", "none"])
def test_worked_example(tmp_path: Path, compression: str) -> None:
    path = put(
        tmp_path / "--home-ana-proj--" / "demo-1" / "session.jsonl",
        WORKED_HEADER + b"".join(WORKED_LINES),
    )
    backend = JsonlBackend(str(tmp_path), compression=compression)
    [header] = backend.list()
    assert header.to_value() == {
        "version": 0,
        "id": "demo-1",
        "createdAt": 1700000000000,
        "cwd": "/home/ana/proj",
        "delegationDepth": 0,
    }
    result = backend.inspect("demo-1")
    assert result.meta == header
    assert values(result.events) == [jsoncodec.loads(x) for x in WORKED_LINES]
    [snapshot] = backend.list_snapshots()
    assert snapshot.revision == backend.read_stored("demo-1").revision
    st = path.stat()
    assert snapshot.revision == (
        f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    )


def test_worked_example_interrupted_turn(tmp_path: Path) -> None:
    content = WORKED_HEADER + b"".join(WORKED_LINES[:3])
    path = put(tmp_path / "--home-ana-proj--" / "demo-1" / "session.jsonl", content)
    backend = JsonlBackend(str(tmp_path))
    revision = backend.list_snapshots()[0].revision
    events = backend.inspect("demo-1").events
    assert values(events[:3]) == [jsoncodec.loads(x) for x in WORKED_LINES[:3]]
    assert events[3].to_value() == {
        "type": "turn/end",
        "seq": 3,
        "time": 1700000000300,
        "data": {"turn": 1, "reason": {"kind": "interrupted"}},
    }
    assert len(events) == 4
    assert path.read_bytes() == content
    assert backend.list_snapshots()[0].revision == revision


@pytest.mark.parametrize("with_call", [True, False])
def test_worked_example_interrupted_tool_call(tmp_path: Path, with_call: bool) -> None:
    args = '{"cmd":"ls"}'
    lines = [
        ev_line("turn/start", 0, {"turn": 1}, time=10),
        WORKED_LINES[1],
        ev_line("step/start", 2, {"turn": 1, "step": 1}, time=30),
        line(
            {
                "type": "assistant/message",
                "seq": 3,
                "time": 40,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "message": {
                        "id": "m-2",
                        "role": "assistant",
                        "content": [
                            {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": args}
                        ],
                        "source": {"kind": "model", "provider": "p", "model": "m"},
                    },
                },
                "surfaceOp": "append",
            }
        ),
    ]
    if with_call:
        lines.append(
            ev_line(
                "tool/call",
                4,
                {"turn": 1, "step": 1, "callId": "call-1", "name": "bash", "arguments": args},
                time=50,
            )
        )
    t = 50 if with_call else 40
    put_raw(tmp_path, *lines, b'{"type":"tool/res')
    events = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    n = len(lines)
    closers = [e.to_value() for e in events[n:]]
    assert [(c["type"], c["seq"], c["time"]) for c in closers] == [
        ("tool/result", n, t),
        ("step/end", n + 1, t),
        ("turn/end", n + 2, t),
    ]
    result = closers[0]
    assert result["data"]["message"]["id"] == f"interrupted-tool-result-call-1-{n}"
    if with_call:
        assert result["data"]["error"] == {
            "name": "ToolOutcomeUnknownError",
            "code": "TOOL_OUTCOME_UNKNOWN",
        }
        assert result["sourceEventSeqs"] == [4]
        text = result["data"]["message"]["content"][0]["content"][0]["text"]
        assert text == OUTCOME_UNKNOWN_TEXT
    else:
        assert result["data"]["error"] == {
            "name": "ToolNotStartedError",
            "code": "TOOL_NOT_STARTED",
        }
        assert "sourceEventSeqs" not in result
    assert closers[1]["data"] == {"turn": 1, "step": 1}
    assert closers[2]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}


def test_inspect_applies_legacy_normalization(tmp_path: Path) -> None:
    put_raw(
        tmp_path,
        ev_line("turn/start", 0, {"turn": 1, "trigger": {"kind": "user"}}),
        ev_line("turn/end", 1, {"turn": 1, "reason": {"kind": "disposed"}}),
    )
    events = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    assert [e.data() for e in events] == [
        {"turn": 1},
        {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}},
    ]
    put_raw(tmp_path, ev_line("turn/start", 0, {"turn": 0, "trigger": {"kind": "user"}}))
    with pytest.raises(SessionPersistenceCorruptionError, match="pre-react-loop turn/start"):
        JsonlBackend(str(tmp_path)).inspect("demo-1")


# ---------------------------------------------------------------------------------------------
# §4.6 Zstandard


def zstd_log(*batches: bytes, header: bytes = WORKED_HEADER) -> list[bytes]:
    return [frame(header)] + [frame(b) for b in batches]


def test_zstd_layout_written_by_the_backend(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path))
    backend.create(hdr(SID))
    backend.append("demo-1", [ev("turn/start", 0, {"turn": 1})])
    backend.append("demo-1", [ev("x", 1), ev("y", 2)])
    data = transcript_path(tmp_path, zstd=True).read_bytes()
    decompressor = zstandard.ZstdDecompressor()
    plains, pos = [], 0
    while pos < len(data):
        params = zstandard.get_frame_parameters(data[pos:])
        assert params.has_checksum
        stream = decompressor.decompressobj()
        plains.append(stream.decompress(data[pos:]))
        pos = len(data) - len(stream.unused_data)
    assert plains[0] == header_line(hdr(SID))
    assert [p.count(b"\n") for p in plains] == [1, 1, 2]


def test_zstd_frames_without_content_size_are_read(tmp_path: Path) -> None:
    put_zstd(
        tmp_path,
        frame(WORKED_HEADER, content_size=False),
        frame(b"".join(WORKED_LINES), content_size=False, checksum=False),
    )
    events = JsonlBackend(str(tmp_path)).inspect("demo-1").events
    assert values(events) == [jsoncodec.loads(x) for x in WORKED_LINES]


def test_zstd_line_may_span_complete_frames(tmp_path: Path) -> None:
    body = b"".join(WORKED_LINES)
    put_zstd(tmp_path, *zstd_log(body[:50], body[50:]))
    assert len(JsonlBackend(str(tmp_path)).inspect("demo-1").events) == 4


def test_zstd_torn_final_frame_is_recovered(tmp_path: Path) -> None:
    frames = zstd_log(WORKED_LINES[0], b"".join(WORKED_LINES[1:3]))
    put_zstd(tmp_path, frames[0], frames[1], frames[2][:-4])  # the checksum never arrived
    backend = JsonlBackend(str(tmp_path))
    stored = backend.read_stored("demo-1")
    assert stored.torn and seqs(stored.events) == [0, 1, 2]
    assert [e.type for e in backend.inspect("demo-1").events][3:] == ["turn/end"]
    with pytest.raises(JsonlBackendError) as info:
        backend.append("demo-1", [ev("x", 3)])
    assert str(info.value) == 'session "demo-1" has a torn stored tail; repair it before appending'


def test_zstd_torn_frame_tail_lines(tmp_path: Path) -> None:
    frames = zstd_log(WORKED_LINES[0], WORKED_LINES[1] + WORKED_LINES[2][:20])
    put_zstd(tmp_path, frames[0], frames[1], frames[2][:-4])
    assert seqs(JsonlBackend(str(tmp_path)).read_stored("demo-1").events) == [0, 1]
    # a torn frame whose bytes yield nothing: no recovered events, still torn
    put_zstd(tmp_path, frames[0], frames[1], frames[2][:3])
    stored = JsonlBackend(str(tmp_path)).read_stored("demo-1")
    assert seqs(stored.events) == [0] and stored.torn


def test_zstd_torn_frame_defect_before_turn_end_is_corrupt(tmp_path: Path) -> None:
    frames = zstd_log(WORKED_LINES[0], b"{bad\n" + WORKED_LINES[3])
    put_zstd(tmp_path, frames[0], frames[1], frames[2][:-4])
    with pytest.raises(
        SessionPersistenceCorruptionError,
        match="^corrupt session log: unparsable committed event at line 2$",
    ):
        JsonlBackend(str(tmp_path)).inspect("demo-1")


def test_zstd_corrupted_complete_frame(tmp_path: Path) -> None:
    frames = zstd_log(WORKED_LINES[0], WORKED_LINES[1], WORKED_LINES[2])
    bad = bytearray(frames[2])
    bad[-1] ^= 0xFF  # checksum mismatch
    put_zstd(tmp_path, frames[0], frames[1], bytes(bad))
    start = len(frames[0]) + len(frames[1])
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).inspect("demo-1")
    assert str(info.value) == (
        f"corrupt Zstandard session log: frame at byte {start} failed validation"
    )


def test_zstd_defect_inside_complete_frames(tmp_path: Path) -> None:
    message = "^corrupt Zstandard session log: complete frame contains a torn JSONL record$"
    for batches in (
        (WORKED_LINES[0], b"{bad\n"),
        (WORKED_LINES[0], WORKED_LINES[1][:-1]),
        (ev_line("x", 5),),
    ):
        put_zstd(tmp_path, *zstd_log(*batches))
        with pytest.raises(SessionPersistenceCorruptionError, match=message):
            JsonlBackend(str(tmp_path)).inspect("demo-1")


def test_zstd_structural_errors(tmp_path: Path) -> None:
    head, body = zstd_log(WORKED_LINES[0])
    cases = {
        b"\x50\x2a\x4d\x18\x00\x00\x00\x00" + head + body: "invalid frame magic at byte 0",
        head + b"\x00\x00\x00\x00" + body: f"invalid frame magic at byte {len(head)}",
        head
        + body[:4]
        + bytes([body[4] | 0x08])
        + body[5:]: f"reserved frame-header bit at byte {len(head) + 4}",
        head
        + bytes.fromhex("28b52ffd0000")
        + b"\x07\x00\x00": f"reserved block type at byte {len(head) + 6}",
    }
    backend = JsonlBackend(str(tmp_path))
    for content, message in cases.items():
        put_zstd(tmp_path, content)
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            backend.inspect("demo-1")
        assert str(info.value) == f"corrupt Zstandard session log: {message}"


def test_zstd_skippable_frame_fails_listing(tmp_path: Path) -> None:
    put_zstd(tmp_path, b"\x50\x2a\x4d\x18\x00\x00\x00\x00", *zstd_log())
    with pytest.raises(SessionPersistenceCorruptionError, match="invalid frame magic at byte 0"):
        JsonlBackend(str(tmp_path)).list()


def test_zstd_header_frame_must_be_one_line(tmp_path: Path) -> None:
    message = "^corrupt Zstandard session log: first frame is not exactly one header line$"
    for head in (WORKED_HEADER + WORKED_LINES[0], WORKED_HEADER[:-1]):
        put_zstd(tmp_path, frame(head))
        backend = JsonlBackend(str(tmp_path))
        with pytest.raises(SessionPersistenceCorruptionError, match=message):
            backend.inspect("demo-1")
        with pytest.raises(SessionPersistenceCorruptionError, match=message):
            backend.list()


def test_zstd_header_frame_failing_validation_in_listing(tmp_path: Path) -> None:
    bad = bytearray(frame(WORKED_HEADER))
    bad[-1] ^= 1
    put_zstd(tmp_path, bytes(bad))
    with pytest.raises(
        SessionPersistenceCorruptionError,
        match="^corrupt Zstandard session log: header frame failed validation$",
    ):
        JsonlBackend(str(tmp_path)).list()


def test_zstd_without_complete_frame(tmp_path: Path) -> None:
    head = frame(WORKED_HEADER)
    backend = JsonlBackend(str(tmp_path))
    for content in (b"", head[:2], head[:-1]):
        put_zstd(tmp_path, content)
        assert backend.list() == []  # empty or half-written: skipped
        with pytest.raises(
            SessionPersistenceCorruptionError, match="^empty or header-less Zstandard session log$"
        ):
            backend.inspect("demo-1")


# ---------------------------------------------------------------------------------------------
# §4.7 root encoding and rejected artifacts


def test_auto_root_with_both_encodings_fails_everything(tmp_path: Path) -> None:
    put_zstd(tmp_path, *zstd_log(), session_id="a")
    raw = put_raw(tmp_path, session_id="b")
    backend = JsonlBackend(str(tmp_path))
    expected = (
        f'session artifact "{raw}" uses .jsonl, but this backend is configured for '
        'compression "zstd"; use a separate root or select the matching compression mode'
    )
    for operation in (
        backend.list,
        backend.list_snapshots,
        lambda: backend.inspect("a"),
        lambda: backend.create(hdr("c")),
        lambda: backend.stored_count("a"),
    ):
        with pytest.raises(JsonlBackendError) as info:
            operation()
        assert str(info.value) == expected


def test_fixed_encoding_rejects_the_opposite_suffix(tmp_path: Path) -> None:
    path = put_zstd(tmp_path, *zstd_log())
    backend = JsonlBackend(str(tmp_path), compression="none")
    with pytest.raises(JsonlBackendError) as info:
        backend.list()
    assert str(info.value) == (
        f'session artifact "{path}" uses .jsonl.zstd, but this backend is configured for '
        'compression "none"; use a separate root or select the matching compression mode'
    )
    with pytest.raises(JsonlBackendError, match="uses .jsonl.zstd"):
        backend.inspect("demo-1")


# A request lists, then inspects with the same token (§3.0.5); a search's reconcile lists, inspects
# each changed session, and lists again. The lookup reuses the survey of its own request.


def _counting_surveys(backend: JsonlBackend, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    survey = backend._survey

    def counted(token: Any) -> Any:
        calls[0] += 1
        return survey(token)

    monkeypatch.setattr(backend, "_survey", counted)
    return calls


def test_a_request_surveys_the_root_once_for_its_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        put_raw(tmp_path, ev_line("user/message", 0, {"text": f"hello {i}"}), session_id=f"s{i}")
    backend = JsonlBackend(str(tmp_path))
    surveys = _counting_surveys(backend, monkeypatch)
    token = CancelToken()
    listed = backend.list_snapshots(token)
    for snapshot in listed:
        assert backend.inspect(snapshot.header.id, token).meta.id == snapshot.header.id
        backend.inspect_window(snapshot.header.id, 0, 0, token)
    assert surveys[0] == 1
    backend.list_snapshots(token)  # a listing always surveys afresh
    assert surveys[0] == 2
    backend.inspect("s1", CancelToken())  # another request: its own survey
    backend.inspect("s1")  # no token, no request to share with
    assert surveys[0] == 4
    del token  # the request is over: its survey goes with its token
    assert len(backend._surveys) == 0


def test_a_reused_survey_never_hides_a_change(tmp_path: Path) -> None:
    put_raw(tmp_path, session_id="a")
    moved = put_raw(tmp_path, session_id="b")
    gone = put_raw(tmp_path, session_id="c")
    backend = JsonlBackend(str(tmp_path))
    token = CancelToken()
    backend.list(token)
    # Vanished since the survey: the lookup surveys again and finds nothing, as it would have.
    gone.unlink()
    with pytest.raises(Exception, match='session "c" not found'):
        backend.inspect("c", token)
    # Moved to another project directory: found where it is now (a fresh survey).
    target = transcript_path(tmp_path, "b", cwd="/elsewhere")
    target.parent.mkdir(parents=True)
    moved.rename(target)
    with pytest.raises(SessionPersistenceCorruptionError, match="identify"):
        backend.inspect("b", token)  # its header's cwd no longer derives the new path
    # A mismatched artifact that appears later is seen by the next listing and the next request.
    put_zstd(tmp_path, *zstd_log(), session_id="z")
    for operation in (lambda: backend.list(token), lambda: backend.inspect("a", CancelToken())):
        with pytest.raises(JsonlBackendError, match="uses .jsonl.zstd"):
            operation()


def test_auto_detects_raw_and_keeps_it(tmp_path: Path) -> None:
    put_raw(tmp_path, session_id="a")
    backend = JsonlBackend(str(tmp_path))
    backend.list()
    backend.create(hdr("b"))
    backend.append("b", [ev("x", 0)])
    assert transcript_path(tmp_path, "b").exists()


def test_auto_undetermined_root_materializes_zstd(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path / "new"))
    assert backend.list() == []
    backend.create(hdr(SID))
    backend.append("demo-1", [ev("x", 0)])
    assert transcript_path(tmp_path / "new", zstd=True).exists()


@pytest.mark.parametrize("name", ["demo-1.jsonl", "other.jsonl.zstd"])
def test_flat_layout_is_refused(tmp_path: Path, name: str) -> None:
    put_raw(tmp_path)
    flat = put(tmp_path / "--home-ana-proj--" / name, WORKED_HEADER)
    backend = JsonlBackend(str(tmp_path))
    expected = (
        f'session artifact "{flat}" uses the unsupported flat-file layout; use a separate '
        "root or move it into a project/session directory before loading"
    )
    for operation in (backend.list, lambda: backend.inspect("demo-1")):
        with pytest.raises(JsonlBackendError) as info:
            operation()
        assert str(info.value) == expected


def test_ignored_entries(tmp_path: Path) -> None:
    put_raw(tmp_path)
    project = tmp_path / "--home-ana-proj--"
    (project / "link.jsonl").symlink_to(project / "demo-1" / "session.jsonl")
    (project / "notes.txt").write_text("x")
    (tmp_path / "stray.jsonl").write_text("x")
    (tmp_path / "linked-project").symlink_to(project)
    (project / "empty-dir").mkdir()
    (project / "demo-1" / "session.jsonl.abc123abc123.tmp").write_text("x")
    (project / "demo-1" / "other-artifact").write_text("x")
    assert [h.id for h in JsonlBackend(str(tmp_path)).list()] == ["demo-1"]


# ---------------------------------------------------------------------------------------------
# §4.8 listing


def test_listing_identity_check(tmp_path: Path) -> None:
    path = put(transcript_path(tmp_path, "a"), line(header_value("b")))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).list()
    expected = transcript_path(tmp_path, "b")
    assert str(info.value) == (
        f'corrupt session log "{path}": header id "b" and cwd identify "{expected}"'
    )


@pytest.mark.parametrize("header", [header_value(""), header_value("demo-1", cwd="")])
def test_listing_identity_without_a_path(tmp_path: Path, header: dict[str, Any]) -> None:
    path = put_raw(tmp_path, header=header)
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).list()
    assert str(info.value) == f'corrupt session log "{path}": header id cannot name a storage path'


def test_identity_accepts_another_spelling_of_the_same_file(tmp_path: Path) -> None:
    # --q--/a passes the identity check only because it is the same file as --p--/a;
    # listing then fails on the duplicate id rather than on corruption.
    put_raw(tmp_path, session_id="a", cwd="/p")
    (tmp_path / "--alias--").symlink_to(tmp_path / "--p--")  # ignored: a symlinked project
    real = tmp_path / "--q--"
    real.mkdir()
    (real / "a").symlink_to(tmp_path / "--p--" / "a")  # a second spelling of the same file
    with pytest.raises(JsonlBackendError, match='duplicate JSONL session id "a"'):
        JsonlBackend(str(tmp_path)).list()


def test_listing_duplicate_ids(tmp_path: Path) -> None:
    put_raw(tmp_path, session_id="s", cwd="/one")
    put_raw(tmp_path, session_id="s", cwd="/two")
    backend = JsonlBackend(str(tmp_path))
    for operation in (backend.list, backend.list_snapshots, lambda: backend.inspect("s")):
        with pytest.raises(JsonlBackendError) as info:
            operation()
        assert (
            str(info.value) == 'duplicate JSONL session id "s" appears in multiple project '
            "directories"
        )


def test_listing_reads_long_header_lines(tmp_path: Path) -> None:
    put_raw(tmp_path / "raw", ev_line("x", 0), header=header_value(agentPreset="p" * 200_000))
    put_zstd(
        tmp_path / "zstd",
        frame(line(header_value(agentPreset="q" * 200_000))),
        frame(ev_line("x", 0)),
    )
    [header] = JsonlBackend(str(tmp_path / "raw")).list()
    assert header.agent_preset == "p" * 200_000
    [header] = JsonlBackend(str(tmp_path / "zstd")).list()
    assert header.agent_preset == "q" * 200_000


def test_listing_does_not_parse_logs(tmp_path: Path) -> None:
    put_raw(tmp_path, b"{garbage\n", ev_line("turn/end", 1))
    backend = JsonlBackend(str(tmp_path))
    assert [h.id for h in backend.list()] == ["demo-1"]
    with pytest.raises(SessionPersistenceCorruptionError):
        backend.inspect("demo-1")


def test_listing_and_snapshots_agree(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path))
    for name in ("a", "b", "c"):
        backend.create(hdr(name, cwd=None))
        backend.append(name, [ev("x", 0)])
    backend.create(hdr("never-appended"))
    ids = sorted(h.id for h in backend.list())
    snapshots = backend.list_snapshots()
    assert ids == sorted(s.header.id for s in snapshots) == ["a", "b", "c"]
    before = {s.header.id: s.revision for s in snapshots}
    assert before["a"] == backend.read_stored("a").revision
    backend.append("a", [ev("x", 1)])
    after = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert after["a"] != before["a"] and after["b"] == before["b"]
    assert (tmp_path / "_no-cwd" / "a").is_dir()


def test_absent_root_lists_nothing(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path / "absent"))
    assert backend.list() == [] and backend.list_snapshots() == []
    with pytest.raises(JsonlBackendError, match='^session "x" not found$'):
        backend.inspect("x")
    assert backend.stored_count("x") is None


def test_mount_refuses_a_root_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        JsonlBackend(str(tmp_path / "file"))


def test_probe_failures_other_than_absence_surface(tmp_path: Path) -> None:
    put_raw(tmp_path)
    session_dir = tmp_path / "--home-ana-proj--" / "demo-1"
    session_dir.chmod(0)
    try:
        if os.access(session_dir, os.R_OK):
            pytest.skip("running with permissions that ignore modes")
        with pytest.raises(PermissionError):
            JsonlBackend(str(tmp_path)).list()
    finally:
        session_dir.chmod(0o700)


def test_a_regular_file_as_parent_is_not_absence(tmp_path: Path) -> None:
    put(tmp_path / "--home-ana-proj--" / "demo-1", b"not a directory")
    backend = JsonlBackend(str(tmp_path))
    assert backend.list() == []
    backend.create(hdr(SID))
    with pytest.raises(NotADirectoryError):
        backend.append("demo-1", [ev("x", 0)])


# ---------------------------------------------------------------------------------------------
# §4.9 lookup


def test_inspect_not_found(tmp_path: Path) -> None:
    put_raw(tmp_path)
    backend = JsonlBackend(str(tmp_path))
    for session_id in ("nope", ""):
        with pytest.raises(JsonlBackendError) as info:
            backend.inspect(session_id)
        assert str(info.value) == f'session "{session_id}" not found'


def test_inspect_requested_id_mismatch(tmp_path: Path) -> None:
    path = put(transcript_path(tmp_path, "a"), line(header_value("b")))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).inspect("a")
    assert str(info.value) == (
        f'corrupt session log "{path}": requested id "a" does not match header id "b"'
    )


def test_inspect_path_identity(tmp_path: Path) -> None:
    path = put_raw(tmp_path, header=header_value("demo-1", cwd="/elsewhere"))
    with pytest.raises(
        SessionPersistenceCorruptionError, match='and cwd identify ".*--elsewhere--'
    ):
        JsonlBackend(str(tmp_path)).inspect("demo-1")
    assert path.exists()


def test_inspect_is_non_mutating(tmp_path: Path) -> None:
    path = put_raw(tmp_path, ev_line("turn/start", 0, {"turn": 1}), b"{torn")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    tree = sorted(files_under(tmp_path))
    backend = JsonlBackend(str(tmp_path))
    for _ in range(2):
        backend.inspect("demo-1")
        backend.list_snapshots()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(files_under(tmp_path)) == tree


def test_cancellation(tmp_path: Path) -> None:
    put_raw(tmp_path)
    token = CancelToken()
    token.cancel()
    backend = JsonlBackend(str(tmp_path))
    for operation in (
        backend.list,
        backend.list_snapshots,
        lambda token: backend.inspect("demo-1", token),
    ):
        with pytest.raises(SessionQueryCancelled):
            operation(token)


# ---------------------------------------------------------------------------------------------
# §4.11 writing


def test_backend_satisfies_the_protocol(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path), read_only=True)
    assert isinstance(backend, PersistenceBackend)
    assert backend.uri == f"jsonl:{tmp_path}" and backend.writable is False
    assert JsonlBackend(str(tmp_path), uri="jsonl:x").uri == "jsonl:x"


def test_create_is_lazy_and_its_failures(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path))
    backend.create(hdr(SID))
    assert not tmp_path.exists() or files_under(tmp_path) == []
    assert backend.list() == [] and backend.stored_count("demo-1") is None
    with pytest.raises(JsonlBackendError) as info:
        backend.create(hdr(SID))
    assert str(info.value) == 'session "demo-1" already exists in this backend'
    with pytest.raises(ValueError, match="createdAt"):
        backend.create(Header.build(version=0, id="bad", createdAt=-1))
    backend.append("demo-1", [ev("x", 0)])
    other = JsonlBackend(str(tmp_path))
    with pytest.raises(JsonlBackendError) as info:
        other.create(hdr(SID, cwd="/somewhere/else"))
    assert str(info.value) == (
        'session "demo-1" already has a persisted log on disk; load/resume it instead of creating'
    )


def test_materialization_refuses_an_existing_log(tmp_path: Path) -> None:
    first, second = JsonlBackend(str(tmp_path)), JsonlBackend(str(tmp_path))
    first.create(hdr(SID))
    second.create(hdr(SID))
    first.append("demo-1", [ev("x", 0)])
    with pytest.raises(JsonlBackendError) as info:
        second.append("demo-1", [ev("x", 0)])
    assert str(info.value) == (
        'refusing to materialize "demo-1": a log already exists on disk (load/resume it instead)'
    )


def test_append_failures(tmp_path: Path) -> None:
    backend = JsonlBackend(str(tmp_path))
    with pytest.raises(JsonlBackendError, match='^session "ghost" not found$'):
        backend.append("ghost", [ev("x", 0)])
    backend.append("ghost", [])  # empty batch: no-op
    backend.create(hdr(SID))
    with pytest.raises(JsonlBackendError) as info:
        backend.append("demo-1", [ev("x", 0), ev("x", 2)])
    assert str(info.value) == 'append seq mismatch for "demo-1": expected 1 at index 1, got 2'
    assert backend.list() == []
    backend.append("demo-1", [ev("x", 0)])
    with pytest.raises(JsonlBackendError, match="expected 1 at index 0, got 0"):
        backend.append("demo-1", [ev("x", 0)])
    backend.append("demo-1", [ev("x", 1)])
    assert backend.stored_count("demo-1") == 2
    with pytest.raises(
        ValueError, match="^session event batch is not losslessly JSON-serializable"
    ):
        backend.append("demo-1", [Event.from_json(b'{"type":"x","seq":2,"data":"\xff"}')])
    with pytest.raises(ValueError, match="packed-row type text-chunks"):
        backend.append("demo-1", [ev("text-chunks", 2)])
    assert JsonlBackend(str(tmp_path)).stored_count("demo-1") == 2


def test_append_to_a_stored_log_reads_it_once(tmp_path: Path) -> None:
    put_raw(tmp_path, ev_line("turn/start", 0, {"turn": 1}))  # open turn: may be continued
    backend = JsonlBackend(str(tmp_path))
    assert backend.stored_count("demo-1") == 1
    with pytest.raises(JsonlBackendError, match="expected 1 at index 0, got 5"):
        backend.append("demo-1", [ev("x", 5)])
    backend.append("demo-1", [ev("x", 1)])
    backend.append("demo-1", [ev("turn/end", 2, {"turn": 1, "reason": {"kind": "completed"}})])
    assert seqs(backend.inspect("demo-1").events) == [0, 1, 2]


def test_append_refuses_a_torn_tail_and_writes_nothing(tmp_path: Path) -> None:
    path = put_raw(tmp_path, ev_line("turn/start", 0), b'{"type":"x"')
    content = path.read_bytes()
    with pytest.raises(JsonlBackendError) as info:
        JsonlBackend(str(tmp_path)).append("demo-1", [ev("x", 1)])
    assert str(info.value) == 'session "demo-1" has a torn stored tail; repair it before appending'
    assert path.read_bytes() == content


def test_read_only_mount_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    backend = JsonlBackend(str(root), read_only=True)
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.create(hdr(SID))
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append("demo-1", [ev("x", 0)])
    assert not root.exists()
    put_raw(root)
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append("demo-1", [ev("x", 0)])
    assert len(backend.inspect("demo-1").events) == 0


def test_file_modes_and_no_leftover_temp_files(tmp_path: Path) -> None:
    root = tmp_path / "a" / "root"
    backend = JsonlBackend(str(root), compression="none")
    backend.create(hdr(SID))
    backend.append("demo-1", [ev("x", 0)])
    path = transcript_path(root)
    for directory in (tmp_path / "a", root, path.parent.parent, path.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert files_under(tmp_path) == [path]


def test_packing_follows_the_mount_option(tmp_path: Path) -> None:
    chunks = [
        ev(
            "assistant/chunk",
            i,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "t"}},
        )
        for i in range(4)
    ]
    for pack_chunks, lines in ((True, 2), (False, 5)):
        root = tmp_path / str(pack_chunks)
        backend = JsonlBackend(str(root), compression="none", pack_chunks=pack_chunks)
        backend.create(hdr(SID))
        backend.append("demo-1", chunks)
        assert transcript_path(root).read_bytes().count(b"\n") == lines
        assert values(backend.inspect("demo-1").events) == values(chunks)


def test_events_with_newlines_in_raw_json_are_rewritten_compactly(tmp_path: Path) -> None:
    event = Event.from_json(b'{"type": "x",\n "seq": 0, "time": 0, "data": {"a": "b\\nc"}}')
    backend = JsonlBackend(str(tmp_path), compression="none")
    backend.create(hdr(SID))
    backend.append("demo-1", [event])
    assert values(backend.inspect("demo-1").events) == values([event])


def test_failed_append_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = JsonlBackend(str(tmp_path), compression="none")
    backend.create(hdr(SID))
    backend.append("demo-1", [ev("x", 0)])
    path = transcript_path(tmp_path)
    content = path.read_bytes()
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(5, "disk on fire")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk on fire"):
        backend.append("demo-1", [ev("x", 1)])
    assert path.read_bytes() == content
    monkeypatch.setattr(os, "fsync", real_fsync)
    backend.append("demo-1", [ev("x", 1)])  # the count was re-read from disk
    assert seqs(backend.inspect("demo-1").events) == [0, 1]


def test_failed_rollback_carries_both_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = JsonlBackend(str(tmp_path), compression="none")
    backend.create(hdr(SID))
    backend.append("demo-1", [ev("x", 0)])

    def failing(*_: Any) -> None:
        raise OSError(5, "disk on fire")

    monkeypatch.setattr(os, "fsync", failing)
    monkeypatch.setattr(os, "ftruncate", failing)
    with pytest.raises(RollbackError) as info:
        backend.append("demo-1", [ev("x", 1)])
    path = transcript_path(tmp_path)
    assert str(info.value) == f'failed to roll back append to "{path}"'
    assert isinstance(info.value.error, OSError) and isinstance(info.value.rollback_error, OSError)


def test_failed_publication_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = JsonlBackend(str(tmp_path))
    backend.create(hdr(SID))

    def failing(*_: Any) -> None:
        raise OSError(5, "no links today")

    monkeypatch.setattr(os, "link", failing)
    with pytest.raises(OSError, match="no links today"):
        backend.append("demo-1", [ev("x", 0)])
    assert files_under(tmp_path) == []
    monkeypatch.undo()
    backend.append("demo-1", [ev("x", 0)])
    assert backend.stored_count("demo-1") == 1


HOSTILE_IDS = [
    "../x",
    "..",
    ".",
    "a/b",
    "/etc/passwd",
    "a\x00b",
    "开发 ~ 😀",
    "\ud800x\udfff",
    "\\..\\..",
    "-" * 300,
    "a" * 10_000,
]


def test_hostile_ids_never_escape_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for compression in ("zstd", "none"):
        backend = JsonlBackend(str(root / compression), compression=compression)
        for session_id in HOSTILE_IDS:
            backend.create(hdr(session_id, cwd="/../../" + session_id[:50]))
            try:
                backend.append(session_id, [ev("x", 0, {"id": session_id})])
            except OSError:
                assert len(escape_segment(session_id)) > 255  # a name too long to store
                continue
            [event] = backend.inspect(session_id).events
            assert event.data() == {"id": session_id}
        listed = {h.id for h in backend.list()}
        assert listed == {i for i in HOSTILE_IDS if len(escape_segment(i)) <= 255}
    assert os.listdir(tmp_path) == ["root"]
    for path in files_under(tmp_path):
        assert Path(os.path.realpath(path)).is_relative_to(root)
        assert path.parent.parent.parent.parent == root


# ---------------------------------------------------------------------------------------------
# property: whatever is written reads back exactly

json_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=8)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | json_text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_text, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def event_specs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bool]:
    """A log as envelope values (seq assigned here) and whether it is balanced."""
    specs: list[dict[str, Any]] = []
    time = draw(st.integers(-(2**50), 2**50))

    def add(kind: str, data: Any, **extra: Any) -> None:
        nonlocal time
        time += draw(st.integers(-5, 50))
        specs.append({"type": kind, "seq": len(specs), "time": time, "data": data, **extra})

    opened = draw(st.booleans())
    if opened:
        add("turn/start", {"turn": 1})
    for _ in range(draw(st.integers(0, 8))):
        part = draw(st.sampled_from(["text", "reasoning", "tool", "message", "call", "odd"]))
        if part in ("text", "reasoning", "tool"):
            index, name = draw(st.integers(0, 2)), draw(st.sampled_from([None, "bash"]))
            for _ in range(draw(st.integers(1, 7))):
                if part == "tool":
                    chunk = {"type": "tool-call-delta", "index": index, "id": "c"}
                    if name is not None:
                        chunk["name"] = name
                    chunk["argumentsDelta"] = draw(json_text)
                else:
                    chunk = {"type": f"{part}-delta", "index": index, "text": draw(json_text)}
                add(
                    "assistant/chunk",
                    {"turn": 1, "step": draw(st.sampled_from([1, 1, 1, 2])), "chunk": chunk},
                )
        elif part == "message":
            add(
                "user/message",
                {
                    "id": draw(json_text),
                    "role": "user",
                    "content": [{"type": "text", "text": draw(json_text)}],
                    "source": {"kind": "user"},
                },
                surfaceOp="append",
            )
        elif part == "call":
            add(
                "assistant/message",
                {
                    "turn": 1,
                    "step": 1,
                    "message": {
                        "id": "m",
                        "role": "assistant",
                        "content": [
                            {"type": "tool-call", "id": "k", "name": "n", "arguments": "{}"}
                        ],
                        "source": {"kind": "model", "provider": "p", "model": "m"},
                    },
                },
                surfaceOp="append",
                sourceEventSeqs=[0],
            )
            add("tool/call", {"turn": 1, "step": 1, "callId": "k", "name": "n", "arguments": "{}"})
        else:
            add(
                draw(st.sampled_from(["plugin/x", "assistant/chunk", "é/\ud800"])),
                draw(json_values),
                **draw(st.sampled_from([{}, {"ignorable": True}])),
            )
    balanced = not opened or draw(st.booleans())
    if opened and balanced:
        add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return specs, balanced


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_specs(), st.sampled_from(["zstd", "none"]), st.booleans(), st.data())
def test_written_logs_read_back_exactly(
    log: tuple[list[dict[str, Any]], bool], compression: str, pack_chunks: bool, data: st.DataObject
) -> None:
    specs, balanced = log
    events = [Event.from_value(spec) for spec in specs]
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(events) - 1)), max_size=3)))
    with tempfile.TemporaryDirectory() as root:
        writer = JsonlBackend(root, compression=compression, pack_chunks=pack_chunks)
        writer.create(hdr("p\ud800"))
        for start, end in zip([0, *cuts], [*cuts, len(events)], strict=True):
            writer.append("p\ud800", events[start:end])
        reader = JsonlBackend(root)
        if not events:
            assert reader.list() == []
            return
        result = reader.inspect("p\ud800")
        assert result.meta.to_value() == {**hdr("p\ud800").to_value(), "delegationDepth": 0}
        assert values(result.events[: len(events)]) == specs
        if balanced:
            assert len(result.events) == len(events)
        assert reader.stored_count("p\ud800") == len(events)


# ---------------------------------------------------------------------------------------------
# crash safety: kill -9 a writer at random points


def crash_batch(seq: int) -> list[dict[str, Any]]:
    """The batch a crash-test writer appends at ``seq`` (deterministic, mixed shapes)."""
    events = []
    if seq == 0:
        events.append({"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}})
    for k in range(5):
        events.append(
            {
                "type": "assistant/chunk",
                "seq": seq + len(events),
                "time": seq + k,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": f"t{seq}"},
                },
            }
        )
    events.append(
        {
            "type": "plugin/x",
            "seq": seq + len(events),
            "time": seq,
            "data": {"pad": "x" * (seq % 997)},
        }
    )
    return events


CRASH_WRITER = """
import sys
from typing import Any
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.jsonl import JsonlBackend

root, compression, session_id = sys.argv[1:4]
backend = JsonlBackend(root, compression=compression)
backend.create(Header.build(version=0, id=session_id, createdAt=1, cwd="/crash"))
"""

CRASH_LOOP = """
print("ready", flush=True)
seq = 0
while True:
    batch = [Event.from_value(v) for v in crash_batch(seq)]
    backend.append(session_id, batch)
    seq += len(batch)
    print(seq, flush=True)
"""


def test_kill_9_never_loses_acknowledged_batches(tmp_path: Path) -> None:
    script = CRASH_WRITER + textwrap.dedent(pyinspect.getsource(crash_batch)) + CRASH_LOOP
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = random.Random(1234)
    deadline = time.monotonic() + 20
    checked = 0
    for iteration in range(6):
        compression = ("zstd", "none")[iteration % 2]
        root = tmp_path / compression
        session_id = f"s{iteration}"
        child = subprocess.Popen(
            [sys.executable, "-c", script, str(root), compression, session_id],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        # Kill only after the first acknowledgement, so every iteration has a batch to check.
        acknowledged = [int(child.stdout.readline())]
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(child.pid, signal.SIGKILL)
        acknowledged += [int(x) for x in child.stdout.read().split()]
        child.wait()
        backend = JsonlBackend(str(root), compression=compression)
        listed = {h.id for h in backend.list()}
        assert {s.header.id for s in backend.list_snapshots()} == listed
        assert session_id in listed
        count = acknowledged[-1]
        expected: list[dict[str, Any]] = []
        while len(expected) < count:
            expected.extend(crash_batch(len(expected)))
        events = backend.inspect(session_id).events
        assert values(events[:count]) == expected
        checked += 1
        assert time.monotonic() < deadline
    assert checked == 6  # every iteration checked an acknowledged batch
