"""Issue 25, finding 1 through the CLI: one damaged log never stops search; every unreadable
session gets one warning line (its file and what is wrong) on stderr after the results, and
``sessions`` names the transcript its listing skipped. At 80 and 200 columns."""

from __future__ import annotations

import json

import pytest

from tests.builders import U, hdr, log_only, write_transcript
from tests.cli.cli_helpers import dsh, fits

pytestmark = [pytest.mark.wire, pytest.mark.slow]


def damaged_root(tmp_path):
    root = tmp_path / "root"
    for n in range(3):
        write_transcript(root, hdr(f"ok-{n}", 1_700_000_000_000 + n, cwd="/w"), [U(0, "needle")])
    bad = write_transcript(root, hdr("bad", 1_700_000_000_009, cwd="/w"), [U(0, "needle")])
    end = log_only("turn/end", 9, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
    bad.write_text(bad.read_text() + "{not json\n" + json.dumps(end) + "\n")
    headless = write_transcript(root, hdr("headless", 1_700_000_000_010, cwd="/w"), [U(0, "x")])
    headless.write_text("{broken\n" + headless.read_text().split("\n", 1)[1])
    return root, bad, headless


@pytest.mark.parametrize("columns", [80, 200])
def test_search_and_sessions_warn_once_per_unreadable_session(tmp_path, columns):
    root, bad, headless = damaged_root(tmp_path)
    store = ("--persistence", f"jsonl:{root}", "--no-hub")
    found = dsh("search", "needle", *store, home=tmp_path, columns=columns)
    assert found.returncode == 0, found.stderr
    assert "3 matching sessions" in found.stdout and fits(found.stdout, columns)
    assert found.stderr.splitlines() == [
        f"warning: unreadable session bad, left out: {bad}: "
        "corrupt session log: unparsable committed event at line 2",
        f"warning: unreadable session headless, left out: {headless}: "
        "corrupt session log: header line is not valid JSON",
    ]
    listed = dsh("sessions", *store, home=tmp_path, columns=columns)
    assert listed.returncode == 0 and "headless" not in listed.stdout
    assert listed.stderr.splitlines() == [
        f"warning: unreadable session headless, left out: {headless}: "
        "corrupt session log: header line is not valid JSON",
    ]
    as_json = dsh("search", "needle", "--json", *store, home=tmp_path, columns=columns)
    page = json.loads(as_json.stdout)
    assert page["unreadableCount"] == 1 and page["unreadable"][0]["path"] == str(bad)
    assert len(as_json.stderr.splitlines()) == 2


def test_a_healthy_home_prints_no_warning(tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("ok", 1, cwd="/w"), [U(0, "needle")])
    found = dsh("search", "needle", "--persistence", f"jsonl:{root}", "--no-hub", home=tmp_path)
    assert found.returncode == 0 and found.stderr == ""
