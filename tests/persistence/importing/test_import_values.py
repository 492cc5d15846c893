"""parse_time (importers.md §0.2 times) against a plain datetime computation of the same rule:
RFC 3339 floored to epoch milliseconds, seconds above 59 read as 59, no such date or hour is
no time. The importer's version keeps a per-day memo; this one recomputes every field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.importing import values
from dsh_query_server.persistence.importing.values import MAX_SAFE, parse_time

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def reference(text: str) -> int | None:
    try:
        date, rest = text[:10], text[11:]
        clock, zone = rest[:8], rest[8:]
        frac = ""
        if zone.startswith("."):
            digits = len(zone) - len(zone[1:].lstrip("0123456789"))
            frac, zone = zone[1:digits], zone[digits:]
        y, mo, d = (int(x) for x in date.split("-"))
        h, mi, s = (int(x) for x in clock.split(":"))
        base = datetime(y, mo, d, h, mi, min(s, 59), tzinfo=UTC)
    except ValueError:
        return None
    ms = (base - EPOCH) // timedelta(milliseconds=1) + (int((frac + "00")[:3]) if frac else 0)
    if zone not in ("Z", "z"):
        sign, hh, mm = zone[0], int(zone[1:3]), int(zone[4:6])
        offset = (hh * 60 + mm) * 60_000
        ms += -offset if sign == "+" else offset
    return ms if -MAX_SAFE <= ms <= MAX_SAFE else None


two = st.integers(0, 99).map(lambda i: f"{i:02d}")
fraction = st.text("0123456789", min_size=1, max_size=12).map(lambda t: "." + t)
zone = st.one_of(
    st.sampled_from(["Z", "z"]),
    st.tuples(st.sampled_from("+-"), two, two).map(lambda t: f"{t[0]}{t[1]}:{t[2]}"),
)
stamp = st.tuples(
    st.integers(1, 9999).map(lambda i: f"{i:04d}"),
    st.one_of(two, st.integers(1, 12).map(lambda i: f"{i:02d}")),
    st.one_of(two, st.integers(1, 28).map(lambda i: f"{i:02d}")),
    st.sampled_from("Tt "),
    st.one_of(two, st.integers(0, 23).map(lambda i: f"{i:02d}")),
    two,
    two,
    st.one_of(st.just(""), fraction),
    zone,
).map(lambda t: f"{t[0]}-{t[1]}-{t[2]}{t[3]}{t[4]}:{t[5]}:{t[6]}{t[7]}{t[8]}")


@settings(max_examples=800)
@given(stamp)
def test_parse_time_equals_the_datetime_rule(text):
    assert parse_time(text) == reference(text)


def test_parse_time_rejects_what_is_no_timestamp():
    assert parse_time("2026-02-30T00:00:00Z") is None
    assert parse_time("2026-01-01T24:00:00Z") is None
    assert parse_time("2026-01-01T00:00:60.5Z") == parse_time("2026-01-01T00:00:59.5Z")
    assert parse_time(17) is None and parse_time("2026-01-01") is None


# The fast path's shape ("YYYY-MM-DDTHH:MM:SS.mmmZ"), with one character of it possibly replaced
# (another digit, a Unicode digit, a separator): the memoised minute answers as the regular
# expression's path does (``reference`` only reads well-formed stamps).
odd_char = st.sampled_from(["0", "9", "٣", "x", ":", ".", "T", "Z", "-", " "])


@settings(max_examples=800)
@given(
    st.tuples(
        st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25),
        st.integers(0, 61), st.integers(0, 61), st.integers(0, 999),
    ).map(lambda t: "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z".format(*t)),
    st.one_of(st.none(), st.tuples(st.integers(0, 23), odd_char)),
)  # fmt: skip
def test_parse_time_fast_shape_equals_the_datetime_rule(text, change):
    if change is not None:
        at, char = change
        text = text[:at] + char + text[at + 1 :]
    expected = reference(text) if change is None else values.parse_rfc3339(text)
    assert parse_time(text) == expected
    assert parse_time(text) == expected  # again: now from the minute's memo
