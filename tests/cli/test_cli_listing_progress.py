"""``dsh-query sessions`` of an importer's home draws the listing's count (protocol.md §8
"Listing a big home") and then the titles' count in its bar when stderr is a terminal, and
writes nothing to stderr when it is piped. The server runs with ``DSH_QUERY_PROGRESS_DELAY_MS=0``
(tests/cli/test_cli_progress.py's environment), so a small home reports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.test_cli_progress import _env, _run_on_pty
from tests.server.test_listing_progress_wire import claude_home

pytestmark = pytest.mark.wire


def test_sessions_draws_the_listing_count_on_a_terminal_only(tmp_path):
    home = claude_home(tmp_path / "claude", 40)
    env = _env(tmp_path / "env")
    args = ["sessions", "--no-hub", "--persistence", f"claude:{home}"]
    status, out, err = _run_on_pty(args, env)
    assert status == 0, err
    assert out.startswith("40 sessions"), out
    assert "dsh-query listSessions" in err, err
    assert "of 40 transcripts" in err and "listing " in err, err
    assert "of 40 sessions" in err and "reading titles " in err, err

    piped = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    assert piped.stdout == out
