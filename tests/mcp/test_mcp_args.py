"""The MCP argument rules and text helpers (tools.md §1.2, §1.5, §1.7) as properties."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.mcp.args import (
    TOOL_BY_NAME,
    TOOLS,
    ToolError,
    check_schema,
    parse_stamp,
    stamp_range,
)
from dsh_query_server.mcp.render import iso_time, js_number, js_stringify
from dsh_query_server.mcp.scope import roots_from_uris
from dsh_query_server.model.workspace import Workspace, normalize


def test_stamp_examples() -> None:
    assert stamp_range("2023-11-14T22:15:20Z", "2023-11-14T23:15:20+01:00", "time") == (
        1700000120000,
        1700000120000,
    )
    lo, hi = stamp_range("2023-11-14T22:15:20.0005Z", "2023-11-14T22:15:20.0005Z", "time")
    assert lo == math.nextafter(1700000120000, math.inf) and lo == 1700000120000.0002
    assert hi == math.nextafter(1700000120001, -math.inf) and hi == 1700000120000.9998
    assert stamp_range("1970-01-01T00:00:00.0001Z", None, "time") == (5e-324, None)


def test_reversed_within_a_millisecond() -> None:
    with pytest.raises(ToolError) as info:
        stamp_range("2023-11-14T22:15:20.00051Z", "2023-11-14T22:15:20.0005Z", "created_at")
    assert info.value.message == "session created_at range from must be less than or equal to to"
    equal = stamp_range("2023-11-14T22:15:20.00050Z", "2023-11-14T22:15:20.0005Z", "time")
    assert equal == (
        math.nextafter(1700000120000, math.inf),
        math.nextafter(1700000120001, -math.inf),
    )


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_stamp_value_matches_the_calendar(moment: datetime, offset: int) -> None:
    sign = "-" if offset < 0 else "+"
    text = (
        f"{moment.year:04d}-"
        + moment.strftime("%m-%dT%H:%M:%S.%f")
        + f"{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    )
    ms, rest = parse_stamp(text, "time_from")
    aware = moment.replace(tzinfo=timezone(timedelta(minutes=offset)))
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    delta = aware - epoch
    expected = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    assert ms == expected and rest == f"{moment.microsecond:06d}"[3:].rstrip("0")


@pytest.mark.parametrize(
    "text",
    [
        "2023-13-01T00:00Z",
        "2023-04-31T00:00Z",
        "2023-01-01T24:00Z",
        "2023-01-01T00:60Z",
        "2023-01-01T00:00:60Z",
        "2023-01-01T00:00+24:00",
        "2023-01-01T00:00-00:60",
    ],
)
def test_calendar_check(text: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_stamp(text, "time_to")
    assert info.value.message == "session time_to range must be a valid ISO 8601 timestamp"


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_iso_time_is_to_iso_string(moment: datetime) -> None:
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    ms = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    expected = (
        f"{moment.year:04d}-"
        + moment.strftime("%m-%dT%H:%M:%S.")
        + f"{moment.microsecond // 1000:03d}Z"
    )
    assert iso_time(ms) == expected


def test_iso_time_edges() -> None:
    assert iso_time(-62198755200000) == "-000001-01-01T00:00:00.000Z"
    assert iso_time(253402300800000) == "+010000-01-01T00:00:00.000Z"
    assert iso_time(8.64e15 + 1) == "invalid time (8640000000000001)"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.0, "3"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (1e20, "100000000000000000000"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (-0.5, "-0.5"),
        (2**53 + 2, "9007199254740994"),
        (12345678901234567890, "12345678901234567000"),
        (5e-324, "5e-324"),
    ],
)
def test_js_number(value: float, text: str) -> None:
    assert js_number(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips(value: float) -> None:
    assert float(js_number(value)) == value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(json_values)
def test_js_stringify_is_json_with_two_space_indent(value: object) -> None:
    text = js_stringify(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, indent=2, ensure_ascii=False)


def test_normalize_and_visibility() -> None:
    assert normalize("//w//app/./x/../y/", "/") == "/w/app/y"
    assert normalize("/..", "/") == "/"
    assert normalize("pkg", "/w/app") == "/w/app/pkg"
    ws = Workspace(["/w/app"], "/")
    for cwd in ("/w/app", "/w/app/pkg", "/w/app/x/../y"):
        assert ws.visible(cwd)
    for cwd in ("/w/app-old", "/w", "/W/app", None, ""):
        assert not ws.visible(cwd)
    assert Workspace(["/"], "/").visible("/anything")
    assert not Workspace([], "/").visible("/w/app")


def test_roots_from_uris() -> None:
    assert roots_from_uris(
        ["file:///w/a%20b", "file://localhost/x", "file://host/y", "http://h/z", "file:///bad%ff"]
    ) == ["/w/a b", "/x"]


@given(
    st.sampled_from([t.name for t in TOOLS]),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3, unique=True),
)
def test_unknown_arguments_are_named(name: str, keys: list[str]) -> None:
    """§1.5 [ours]: any key a tool does not declare is refused, named in the order sent; the
    tool's own keys never are."""
    spec = TOOL_BY_NAME[name]
    own = {p.name for p in spec.props}
    unknown = [k for k in keys if k not in own]
    args = {p: "x" for p in spec.required} | dict.fromkeys(keys, "x")
    try:
        check_schema(spec, args)
    except ToolError as exc:
        named = [json.dumps(k, ensure_ascii=False) for k in unknown]
        if unknown:
            assert exc.code == "INVALID_ARGS" and ", ".join(named) + " (allowed: " in exc.message
        else:
            assert "unknown propert" not in exc.message
    else:
        assert not unknown


def test_every_schema_states_its_bounds() -> None:
    for spec in TOOLS:
        schema = spec.input_schema(7)
        assert schema["additionalProperties"] is False
        for prop in schema["properties"].values():
            if prop["type"] == "integer":
                assert 0 <= prop["minimum"] <= prop["maximum"] <= 2**53 - 1
    read = TOOL_BY_NAME["session_event_read"].input_schema(7)["properties"]
    assert read["before"]["maximum"] == read["after"]["maximum"] == 7  # the configured max
