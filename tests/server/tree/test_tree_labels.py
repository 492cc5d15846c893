"""How session nodes word their titles and dates (protocol.md §6 [ours]): pure functions."""

from __future__ import annotations

import calendar

from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.server.tree.nodes import TITLE_CHARS, relative_time, title_text
from dsh_query_server.values import collapse_whitespace


@given(st.text(max_size=300))
def test_a_title_is_one_line_within_the_limit_and_a_prefix_of_the_text(text):
    line = collapse_whitespace(text)
    title = title_text(text)
    assert len(title) <= TITLE_CHARS and "\n" not in title
    if len(line) <= TITLE_CHARS:
        assert title == line
    else:
        assert title.endswith("…") and line.startswith(title[:-1])


def test_a_long_title_is_cut_after_a_whole_word():
    assert title_text("Investigate why mix phx.server no longer starts") == (
        "Investigate why mix phx.server…"
    )
    # no space in the last third: cut inside the word rather than lose most of the line
    assert title_text("a " + "x" * 60) == "a " + "x" * (TITLE_CHARS - 3) + "…"


def test_dates_are_relative_within_30_days_then_the_day():
    now = calendar.timegm((2026, 12, 4, 18, 0, 0)) * 1.0
    ms = lambda *t: calendar.timegm(t) * 1000  # noqa: E731
    assert relative_time(ms(2026, 12, 4, 17, 59, 30), now) == "just now"
    assert relative_time(ms(2026, 12, 4, 17, 55, 0), now) == "5 min ago"
    assert relative_time(ms(2026, 12, 4, 15, 0, 0), now) == "3 h ago"
    assert relative_time(ms(2026, 11, 22, 18, 0, 0), now) == "12 d ago"
    assert relative_time(ms(2026, 2, 10, 21, 54, 0), now) == "Feb 10"
    assert relative_time(ms(2025, 12, 24, 9, 0, 0), now) == "2025-12-24"
    assert relative_time(ms(2027, 1, 1, 0, 0, 0), now) == "2027-01-01"  # a clock ahead
    assert relative_time("soon", now) is None
