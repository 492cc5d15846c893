"""importers.md §0.1 and §5: how transcript bytes become records, and the damaged-file edge cases
end to end through the claude: backend."""

from __future__ import annotations

import io
import pathlib

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.importing.lines import (
    BadSegment,
    Line,
    Record,
    final_fragment,
    read_items,
    read_lines,
    split_line,
)
from tests.import_helpers import checked, data, jl, surface_texts, write_home


def items(raw: bytes, **kw):
    return list(read_items(io.BytesIO(raw), len(raw), NULL_TOKEN, **kw))


def value(item: Record | BadSegment) -> object:
    """The record's value; a bad segment where a record was expected fails the test."""
    assert isinstance(item, Record), item
    return item.value


def test_split_only_at_newline_and_keep_line_separators():
    raw = '{"a":"x\u2028y\u2029z"}\r\n{"b":1}\n'.encode()
    got = items(raw)
    assert [(i.line, value(i)) for i in got] == [(1, {"a": "x\u2028y\u2029z"}), (2, {"b": 1})]


def test_torn_tail_is_ignored_and_a_complete_fragment_is_a_record():
    assert [value(i) for i in items(b'{"a":1}\n{"b":')] == [{"a": 1}]
    assert [value(i) for i in items(b'{"a":1}\n{"b":2}')] == [{"a": 1}, {"b": 2}]


def test_fused_line_gives_a_bad_segment_then_the_records():
    raw = b'{"type":"user","mess{"a":1} {"b":2}\n'
    got = items(raw)
    assert isinstance(got[0], BadSegment) and got[0].offset == 0 and got[0].length == 20
    assert got[0].preview == '{"type":"user","mess'
    assert [value(i) for i in got[1:]] == [{"a": 1}, {"b": 2}]


def test_nul_padding_blank_lines_and_bad_lines():
    raw = b'\0\0\0\n\0\0{"a":1}\0\n   \n[1,2]\nNaN\n{"x":NaN}\n\xff{"c":"\xff"}\n'
    got = items(raw)
    assert isinstance(got[0], Record) and got[0].value == {"a": 1} and got[0].offset == 6
    assert [type(i).__name__ for i in got[1:4]] == ["BadSegment"] * 3
    assert got[4].line == 7 and isinstance(got[4], BadSegment) and got[4].length == 1
    assert value(got[5]) == {"c": "\ufffd"}


def test_zst_decode_error_keeps_the_plaintext_before_it(tmp_path):
    import zstandard

    raw = (
        zstandard.ZstdCompressor().compress(b'{"a":1}\n{"b":2}\n{"c":')
        + b"\x28\xb5\x2f\xfd garbage"
    )
    assert [value(i) for i in items(raw, compressed=True)] == [{"a": 1}, {"b": 2}]


def test_header_scan_stops_within_one_mebibyte():
    raw = b'{"pad":"' + b"x" * 1_048_600 + b'"}\n{"a":1}\n'
    assert items(raw, max_line_end=1_048_576) == []
    assert [value(i) for i in items(b'{"a":1}\n' + raw, max_line_end=1_048_576)] == [{"a": 1}]


SID = "edge"


def user(
    uuid: str, parent: str | None, content: object, n: int = 0, **kw: object
) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
        "cwd": "/w",
        "message": {"role": "user", "content": content},
        **kw,
    }


def backend(tmp: pathlib.Path, raw: bytes) -> ClaudeBackend:
    write_home(tmp / "h", {f"projects/-w/{SID}.jsonl": raw})
    return ClaudeBackend(str(tmp / "h"), "claude:x")


def test_damaged_transcript_stays_readable(tmp_path):
    raw = (
        jl(user("u1", None, "first", 0))
        + b'{"type":"user","uu'
        + jl(user("u2", "u1", "second", 1))
        + b"\0\0\0\0\n"
        + b"not json\n"
        + jl(user("u3", "u2", "third\u2028line", 2))
        + b'{"type":"us'
    )
    b = backend(tmp_path, raw)
    ins = b.inspect(SID)
    checked(ins, SID)
    bad = [data(ins, e.seq) for e in ins.events if e.type == "import/bad-line"]
    assert [(d["byteOffset"], d["length"], d["import"]["line"]) for d in bad] == [
        (len(jl(user("u1", None, "first", 0))), 18, 2),
        (raw.index(b"not json"), 8, 4),
    ]
    assert surface_texts(ins) == ["u1", "u2", "u3"]
    assert ins.meta.to_value()["source"]["approximate"] == ["damaged-lines"]
    assert (
        data(ins, [e.seq for e in ins.events if e.type == "user/message"][-1])["content"][0]["text"]
        == "third\u2028line"
    )
    # the torn tail completes: the line maps under a new revision
    before = b.list_snapshots()[0].revision
    with open(tmp_path / f"h/projects/-w/{SID}.jsonl", "ab") as f:
        f.write(jl(user("u4", "u3", "fourth", 3))[len(b'{"type":"us') :])
    assert b.list_snapshots()[0].revision != before
    assert surface_texts(b.inspect(SID))[-1] == "u4"


def test_missing_timestamp_takes_the_previous_time(tmp_path):
    rec = user("u2", "u1", "x")
    del rec["timestamp"]
    b = backend(tmp_path, jl(user("u1", None, "a", 5), rec))
    ins = b.inspect(SID)
    times = [e.time for e in ins.events if e.type == "user/message"]
    assert times[0] == times[1] == 1767225605000


def test_a_twenty_megabyte_line(tmp_path):
    big = "y" * (20 * 1024 * 1024)
    huge_opaque = {"type": "progress", "uuid": "p", "sessionId": SID, "blob": {"k": big}, "n": 1}
    b = backend(
        tmp_path,
        jl(
            user("u0", None, "small", 0),
            user("u1", "u0", big, 0),
            huge_opaque,
            user("u2", "u1", "after", 1),
        ),
    )
    [h] = b.list()  # the anchor is the first line; the scan never reads the 20 MB one
    ins = b.inspect(SID)
    checked(ins, SID)
    first = data(ins, [e.seq for e in ins.events if e.type == "user/message"][1])
    assert first["content"][0]["text"] == big  # surface content is never cut
    opaque = data(ins, [e.seq for e in ins.events if e.type == "claude/progress"][0])
    assert opaque["record"] == {"type": "progress", "uuid": "p", "sessionId": SID, "n": 1}
    assert opaque["recordBytes"] > 20 * 1024 * 1024
    assert h.id == SID


def test_anchor_beyond_one_mebibyte_is_not_listed(tmp_path):
    filler = {"type": "file-history-snapshot", "pad": "z" * 1_100_000}
    b = backend(tmp_path, jl(filler, user("u1", None, "late")))
    assert b.list() == []
    b = backend(tmp_path / "again", jl(user("u1", None, "z" * 2_000_000)))
    assert b.list() == []  # a huge first record is no anchor within 1 MiB


def test_fused_line_with_a_huge_stub_is_read_in_one_decode():
    stub = (
        b'{"type":"assistant","message":{"content":[' + b'{"type":"text","text":"\xff"},' * 60_000
    )
    record = b'{"type":"user","uuid":"u9"}'
    got = items(stub + record + b"\n")
    assert isinstance(got[0], BadSegment) and got[0].length == len(stub)
    assert value(got[1]) == {"type": "user", "uuid": "u9"} and got[1].offset == len(stub)


class _Pieces(io.BytesIO):
    """A stream whose reads return at most the next of ``sizes`` bytes: the lines then cross
    piece boundaries anywhere (one piece, many pieces, a piece without a 0x0A)."""

    def __init__(self, raw: bytes, sizes: list[int]) -> None:
        super().__init__(raw)
        self._sizes = sizes

    def read(self, size: int | None = -1, /) -> bytes:
        step = self._sizes[self.tell() % len(self._sizes)]
        return super().read(step if size is None or size < 0 else min(size, step))


def _expected_lines(raw: bytes, max_line_end: int | None) -> list[Line]:
    """§0.1 read the plain way: the whole text split at each 0x0A."""
    out: list[Line] = []
    start = 0
    for n, part in enumerate(raw.split(b"\n")[:-1], start=1):
        if max_line_end is not None and start + len(part) + 1 > max_line_end:
            return out
        out.append(Line(start, len(part), False, part, split_line(part, n, start)))
        start += len(part) + 1
    tail = raw[start:]
    if max_line_end is not None and len(raw) > max_line_end:
        return out
    if tail:
        out.append(Line(start, len(tail), True, tail, final_fragment(tail, len(out) + 1, start)))
    return out


_LINE = st.sampled_from(
    [b'{"a":1}', b"", b"\0\0", b'{"b":[1,2]} {"c":"x"}', b"not json", b'xx{"d":2}', b'{"e":"\xff"}']
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_LINE, max_size=12),
    st.booleans(),
    st.lists(st.integers(1, 40), min_size=1, max_size=5),
    st.one_of(st.none(), st.integers(0, 120)),
)
def test_read_lines_is_the_whole_text_split_at_newlines(lines, ended, sizes, max_line_end):
    """read_lines, whatever pieces its stream returns, gives what splitting the whole text gives:
    the same lines, offsets, bytes and items (its bytes-slicing fast path against the plain
    split)."""
    raw = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    got = list(read_lines(_Pieces(raw, sizes), len(raw), NULL_TOKEN, max_line_end=max_line_end))
    assert got == _expected_lines(raw, max_line_end)
