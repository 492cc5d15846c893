"""The typed fast paths of packed-row decoding (``unpack_line``, ``packed_members``) give exactly
``unpack_row``'s events, or defer to it (persistence.md §3.2)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.persistence.logical.records import (
    MalformedRow,
    packed_members,
    unpack_line,
    unpack_row,
)

# -- the typed fast paths (unpack_line, packed_members) agree with unpack_row -------------------

_numbers = st.one_of(
    st.integers(-(2**60), 2**60), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)
_strings = st.text(max_size=6)
_any_value = st.one_of(_numbers, _strings, st.none(), st.lists(_strings, max_size=2))


@st.composite
def row_texts(draw: st.DrawFn) -> tuple[str, bytes]:
    """A packed row's JSON text: well-formed often, otherwise with one field changed or dropped."""
    tag = draw(st.sampled_from(["text-chunks", "reasoning-chunks", "tool-call-chunks"]))
    members = draw(st.integers(0, 5))
    data: dict[str, Any] = {
        "turn": draw(_numbers),
        "step": draw(_numbers),
        "index": draw(_numbers),
        "dt": draw(
            st.lists(
                st.integers(-(2**54), 2**54),
                min_size=max(members - 1, 0),
                max_size=max(members - 1, 0),
            )
        ),
    }
    payloads = draw(st.lists(_strings, min_size=members, max_size=members))
    if tag == "tool-call-chunks":
        data["id"] = draw(_strings)
        if draw(st.booleans()):
            data["name"] = draw(_strings)
        data["args"] = payloads
    else:
        data["texts"] = payloads
    value: dict[str, Any] = {
        "type": tag,
        "seq0": draw(st.integers(-2, 2**53)),
        "time0": draw(st.integers(-(2**53), 2**53)),
        "data": data,
    }
    if draw(st.booleans()):
        target = draw(st.sampled_from([value, data]))
        key = draw(st.sampled_from(sorted(target)))
        if draw(st.booleans()):
            del target[key]
        else:
            target[key] = draw(_any_value)
    return tag, jsoncodec.dumps(value)


def _outcome(run: Any) -> Any:
    try:
        return [e.to_value() for e in run()], [e.raw for e in run()]
    except MalformedRow as exc:
        return str(exc)


@settings(max_examples=400)
@given(row_texts(), st.booleans())
def test_typed_fast_paths_equal_unpack_row(case: tuple[str, bytes], sqlite: bool) -> None:
    tag, text = case
    value = jsoncodec.loads(text)
    expected = _outcome(lambda: unpack_row(value, sqlite=sqlite))
    if not sqlite:
        assert _outcome(lambda: unpack_line(text, tag)) == expected
    if isinstance(value.get("data"), dict) and {"seq0", "time0"} <= value.keys():
        # A SQLite row: the tag, seq0 and time0 are columns, data its JSON text.
        columns = {"type": tag, "seq0": value["seq0"], "time0": value["time0"]}
        expected = _outcome(lambda: unpack_row({**columns, "data": value["data"]}, sqlite=sqlite))
        fast = packed_members(
            tag, value["seq0"], value["time0"], jsoncodec.dumps(value["data"]), sqlite=sqlite
        )
        if fast is not None:  # None defers to unpack_row; events must be unpack_row's exactly
            assert ([e.to_value() for e in fast], [e.raw for e in fast]) == expected
