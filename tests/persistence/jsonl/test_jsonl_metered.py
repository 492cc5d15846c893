"""A metered decode (a request showing ``reading k of n MB``, decode.py) decides exactly what the
plain one does: the same header, events, torn flag and seek hints, or the same error; the meter
is told rising offsets inside the file. The step is made small so that every line boundary and
every frame is a possible cut."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.model.event import Header
from dsh_query_server.persistence.jsonl import decode as decode_module
from dsh_query_server.persistence.jsonl import header_line, zstd_frame
from dsh_query_server.persistence.jsonl.decode import decode_raw, decode_zstd
from tests.builders import A, U, hdr

HEADER = header_line(Header.from_value(hdr("s", 1, cwd="/p")))

# A line of the body: an event in order (by its index), a seq gap, garbage, blank, a long one.
_LINE = st.sampled_from(["event", "event", "event", "long", "gap", "garbage", "blank", "turn_end"])


def _body(kinds: list[str]) -> list[bytes]:
    lines: list[bytes] = []
    seq = 0
    for kind in kinds:
        if kind in ("event", "long", "turn_end"):
            text = "x" * 300 if kind == "long" else f"m{seq}"
            event = A(seq, text) if kind == "turn_end" else U(seq, text)
            value: Any = event.to_value()
            if kind == "turn_end":
                value = {"type": "turn/end", "seq": seq, "time": 0, "data": {"turn": 1}}
            lines.append(json.dumps(value).encode())
            seq += 1
        elif kind == "gap":
            lines.append(json.dumps(U(seq + 5).to_value()).encode())
        elif kind == "garbage":
            lines.append(b"{not json")
        else:
            lines.append(b"")
    return lines


def _outcome(decode: Any, content: bytes, **kw: Any) -> Any:
    try:
        got = decode(content, "/p/session.jsonl", **kw)
    except Exception as exc:  # noqa: BLE001 - compared with the plain decode's error
        return (type(exc).__name__, str(exc))
    return (
        got.header.to_value(),
        [e.to_value() for e in got.events],
        got.torn,
        got.body,
        got.marks,
    )


@settings(max_examples=150, deadline=None)
@given(
    kinds=st.lists(_LINE, max_size=60),
    unterminated=st.booleans(),
    step=st.integers(min_value=1, max_value=400),
)
def test_a_metered_raw_decode_is_the_plain_one(kinds, unterminated, step):
    body = b"\n".join(_body(kinds))
    content = HEADER + body + (b"" if unterminated or not body else b"\n")
    told: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decode_module, "METER_STEP", step)
        metered = _outcome(decode_raw, content, meter=lambda d, t: told.append((d, t)))
    assert metered == _outcome(decode_raw, content)
    assert [d for d, _ in told] == sorted(d for d, _ in told)
    assert all(0 < d < t == len(content) for d, t in told)


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(st.lists(_LINE, min_size=1, max_size=8), max_size=12),
    step=st.integers(min_value=1, max_value=2000),
)
def test_a_metered_zstandard_decode_is_the_plain_one(batches, step):
    content = zstd_frame(HEADER) + b"".join(
        zstd_frame(b"".join(line + b"\n" for line in _body(kinds))) for kinds in batches
    )
    told: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decode_module, "METER_STEP", step)
        metered = _outcome(decode_zstd, content, meter=lambda d, t: told.append((d, t)))
    assert metered == _outcome(decode_zstd, content)
    assert [d for d, _ in told] == sorted(d for d, _ in told)
    assert all(0 <= d < t == len(content) for d, t in told)
