"""``dsh-query usage`` (usage.md §5) as a user runs it, over a real Claude Code home: the table
fits 80 columns, its numbers are the server's, an unknown model says "no price", and one session
shows its responses."""

from __future__ import annotations

import json
import pathlib

import pytest

from tests.cli.cli_helpers import dsh, fits
from tests.import_helpers import jl, write_home
from tests.query.test_usage_service import DUPLICATES, TRUNK, anthropic, response, user

pytestmark = pytest.mark.wire

OTHER = "0b0b0b0b-0000-4000-8000-000000000009"


def home(tmp: pathlib.Path) -> str:
    other = jl(
        user("u1", None, "hi", 1, sid=OTHER),
        {
            **response("a1", "u1", "m1", 2, anthropic(100, 50), sid=OTHER, model="house-model"),
            "timestamp": "2026-01-03T10:00:00Z",
        },  # fmt: skip
    )
    root = write_home(
        tmp / "claude",
        {f"projects/-w/{TRUNK}.jsonl": DUPLICATES, f"projects/-w/{OTHER}.jsonl": other},
    )
    return f"claude:{root}"


def test_daily_table_matches_the_json_and_fits_80_columns(tmp_path):
    uri = home(tmp_path)
    table = dsh("usage", "--persistence", uri, "--tz", "UTC", home=tmp_path, columns=80)
    assert table.returncode == 0, table.stderr
    assert fits(table.stdout, 80)
    lines = table.stdout.splitlines()
    assert lines[0] == "Usage by day (UTC)"
    day1 = next(line for line in lines if line.startswith("2026-01-01"))
    assert day1.split()[:6] == ["2026-01-01", "2", "4", "1900", "100", "47"]
    assert "$0.0017" in day1 and "█" * 10 in day1  # the largest row's bar is full
    day3 = next(line for line in lines if line.startswith("2026-01-03"))
    assert "no price" in day3  # an unknown model: its tokens, and no cost
    total = next(line for line in lines if line.startswith("total"))
    assert total.split()[:8] == ["total", "(2", "sess.)", "3", "104", "1900", "100", "97"]
    assert "$0.0017*" in total  # the priced part, marked: one response has no price
    assert "1 responses have no price (house-model)" in table.stdout
    raw = dsh("usage", "--persistence", uri, "--tz", "UTC", "--json", home=tmp_path)
    summary = json.loads(raw.stdout)
    assert [r["key"] for r in summary["rows"]] == ["2026-01-01", "2026-01-03"]
    assert summary["total"]["costUsd"] == "0.001662"
    assert summary["total"]["unpricedModels"] == ["house-model"]


def test_by_model_and_since(tmp_path):
    uri = home(tmp_path)
    out = dsh("usage", "--persistence", uri, "--by", "model", "--since", "2026-01-02",
              "--json", home=tmp_path)  # fmt: skip
    summary = json.loads(out.stdout)
    assert [(r["key"], r["total"]["input"]) for r in summary["rows"]] == [("house-model", 100)]


def test_one_session_lists_its_responses(tmp_path):
    uri = home(tmp_path)
    out = dsh("usage", TRUNK, "--persistence", uri, "--descendants", home=tmp_path,
              columns=80)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert fits(out.stdout, 80)
    rows = [line.split() for line in out.stdout.splitlines()]
    steps = [r for r in rows if r and r[0].isdigit()]
    assert [r[4:8] for r in steps] == [["3", "900", "100", "40"], ["1", "1000", "-", "7"]]
    assert "peak context 1003 tokens" in out.stdout


def test_a_bad_time_zone_is_a_coded_error(tmp_path):
    out = dsh("usage", "--persistence", home(tmp_path), "--tz", "Nope/Zone", home=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error SESSION_QUERY_INVALID_REQUEST: timeZone must be")
