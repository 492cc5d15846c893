"""The dsh-query command line, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.builders import A, R, U, hdr, log_only, write_transcript

pytestmark = [pytest.mark.wire, pytest.mark.slow]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    # The CLI's default store and search index live under XDG dirs: keep them out of $HOME.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state-home"))


def dsh(*args, env=None, cwd=None):
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )
    return result


def test_demo_shows_what_the_service_sees(tmp_path):
    # TMPDIR: the demo leaves its HTML page in a private folder for the user to open
    result = dsh("demo", env={"XDG_STATE_HOME": str(tmp_path / "state"), "TMPDIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "7 sessions" in out and "fix-flaky-tests" in out and "release-notes-2-4" in out
    assert "live+persisted" in out and "shadowed" in out and "current" in out and "log-only" in out
    assert "read-refunds  (live, sub-agent)" in out  # two levels of sub-agents in the lineage tree
    assert "[output truncated: 1 failure, timeout]" in out  # content is never read as markup
    assert 'search "fake clock": try-freezegun' in out
    assert not (tmp_path / "state").exists()  # the demo keeps its store in a temporary directory


def make_root(tmp_path):
    root = tmp_path / "root"
    write_transcript(
        root,
        hdr("one", 1, cwd="/w"),
        [
            log_only("turn/start", 0, {"turn": 1}),
            U(1, "find the needle"),
            A(2, "here", op=R(1, 1), src=[1]),
            log_only("turn/end", 3, {"turn": 1, "reason": {"kind": "completed"}}),
        ],
    )
    write_transcript(root, hdr("two", 2, parentSession="one"), [U(0, "[bold]not markup[/bold]")])
    return root


def test_client_commands_as_json(tmp_path):
    uri = f"jsonl:{make_root(tmp_path)}"
    sessions = json.loads(dsh("sessions", "--persistence", uri, "--json").stdout)
    assert [s["header"]["id"] for s in sessions] == ["two", "one"]
    events = json.loads(dsh("events", "one", "--persistence", uri, "--json").stdout)
    assert [e["surface"] for e in events] == ["log-only", "shadowed", "current", "log-only"]
    window = json.loads(
        dsh("read", "one", "2", "--before", "1", "--persistence", uri, "--json").stdout
    )
    assert (window["startSeq"], window["endSeq"]) == (1, 2)
    surface = json.loads(dsh("surface", "one", "--persistence", uri, "--json").stdout)
    assert [e["seq"] for e in surface["events"]] == [2]
    lineage = json.loads(dsh("trace", "two", "--persistence", uri, "--json").stdout)
    assert lineage["root"]["header"]["id"] == "one"
    trace = json.loads(dsh("trace", "one", "1", "--persistence", uri, "--json").stdout)
    assert trace["replacedBy"] == 2
    hits = json.loads(dsh("search", "needle", "--persistence", uri, "--json").stdout)
    assert [h["header"]["id"] for h in hits["items"]] == ["one"]


def test_client_tables_and_errors(tmp_path):
    root = make_root(tmp_path)
    tables = dsh("events", "two", "--persistence", f"jsonl:{root}")
    assert "[bold]not markup[/bold]" in tables.stdout
    mounted = dsh(
        "mount", "jsonl:root?readOnly=true", cwd=tmp_path
    )  # relative to the working directory
    assert mounted.returncode == 0, mounted.stderr
    assert (
        f"mounted jsonl:{root}?readOnly=true (read-only)" in mounted.stdout
        and "2 sessions" in mounted.stdout
    )
    missing = dsh("events", "nope", "--persistence", f"jsonl:{root}")
    assert missing.returncode == 2
    assert (
        missing.stderr.strip() == 'error SESSION_QUERY_SESSION_NOT_FOUND: session "nope" not found'
    )
    assert "Traceback" not in missing.stderr


# -- the CLI at the size of a real home (issue 14) ------------------------------------------------

SHARED = "019c0000-1111-7"  # UUIDv7 ids of sessions started the same moment share this much
UUID_A = SHARED + "000-8000-00000000000a"
UUID_B = SHARED + "100-8000-00000000000b"
DAY_MS = 86_400_000


def make_home(tmp_path):
    """A dsh root, a claude: home and a codex: home (the spec fixtures), mounted as one."""
    import shutil
    import time

    from tests.import_helpers import SPEC

    root = tmp_path / "root"
    now = int(time.time() * 1000)
    long_cwd = "/w/" + "very-long-directory-name/" * 6 + "project"
    write_transcript(root, hdr(UUID_A, now, cwd=long_cwd), [U(0, "alpha " * 40)])
    write_transcript(root, hdr(UUID_B, now - 10 * DAY_MS, cwd="/elsewhere"), [U(0, "beta")])
    claude = shutil.copytree(SPEC / "claude", tmp_path / "claude")
    codex = shutil.copytree(SPEC / "codex", tmp_path / "codex")
    return [
        "--persistence",
        f"jsonl:{root}",
        "--persistence",
        f"claude:{claude}",
        "--persistence",
        f"codex:{codex}",
    ], long_cwd


def test_sessions_one_line_per_row_cut_to_the_terminal_with_the_agent(tmp_path):
    from rich.cells import cell_len

    flags, _ = make_home(tmp_path)
    result = dsh("sessions", *flags, env={"COLUMNS": "72"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "5 sessions (newest first)"
    assert lines[1].split()[:2] == ["id", "agent"]
    rows = lines[2:]
    assert len(rows) == 5 and all(cell_len(line) <= 72 for line in lines)
    assert any("…" in row for row in rows)  # the long cwd was cut, not wrapped
    agents = sorted(row.split()[1] for row in rows)
    assert agents == ["claude-code", "claude-code", "codex", "dsh", "dsh"]
    # UUIDs show as their shortest unique prefix; names people chose show whole.
    first = {row.split()[0] for row in rows}
    assert UUID_A[: len(SHARED) + 1] in first and UUID_B[: len(SHARED) + 1] in first
    assert "claude-demo" in first and "claude-demo/agent-ab12" in first
    codex_short = next(row.split()[0] for row in rows if row.split()[1] == "codex")
    assert len(codex_short) == 8 and "019b7e26-5500-7000-8000-0000000000f1".startswith(codex_short)
    # A pipe without $COLUMNS gets whole rows.
    whole = dsh("sessions", *flags, env={"COLUMNS": ""})
    assert "very-long-directory-name/" * 6 in whole.stdout


def test_sessions_filters_and_json_shape(tmp_path):
    flags, long_cwd = make_home(tmp_path)

    def listed(*extra):
        result = dsh("sessions", *flags, "--json", *extra)
        assert result.returncode == 0, result.stderr
        return sorted(r["header"]["id"] for r in json.loads(result.stdout))

    assert listed("--agent", "codex") == ["019b7e26-5500-7000-8000-0000000000f1"]
    assert listed("--agent", "claude") == ["claude-demo", "claude-demo/agent-ab12"]
    assert listed("--agent", "dsh", "--agent", "codex") == sorted(
        [UUID_A, UUID_B, "019b7e26-5500-7000-8000-0000000000f1"]
    )
    assert listed("--cwd", "/w/very-long-directory-name") == [UUID_A]
    assert listed("--cwd", long_cwd, "--agent", "codex") == []
    assert listed("--since", "2d", "--agent", "dsh") == [UUID_A]
    assert listed("--since", "2000-01-01", "--agent", "dsh") == [UUID_A, UUID_B]
    bad = dsh("sessions", *flags, "--since", "yesterday")
    assert bad.returncode == 2 and "--since takes a duration" in bad.stderr
    everything = json.loads(dsh("sessions", *flags, "--json").stdout)
    assert set(everything[0]) >= {"header", "live", "persisted"}  # the server's records, as before


def test_ids_are_accepted_as_unique_prefixes(tmp_path):
    flags, _ = make_home(tmp_path)
    events = dsh("events", UUID_B[: len(SHARED) + 1], *flags, "--json")
    assert events.returncode == 0, events.stderr
    assert [e["seq"] for e in json.loads(events.stdout)] == [0]
    surface = json.loads(dsh("surface", "019b7e", *flags, "--json").stdout)
    assert surface["session"]["id"] == "019b7e26-5500-7000-8000-0000000000f1"
    exact = dsh("trace", "claude-demo", *flags, "--json")  # an exact id wins over longer ones
    assert json.loads(exact.stdout)["target"]["header"]["id"] == "claude-demo"
    ambiguous = dsh("events", SHARED, *flags)
    assert ambiguous.returncode == 2 and "Traceback" not in ambiguous.stderr
    assert f'session id prefix "{SHARED}" is ambiguous; it matches 2 sessions' in ambiguous.stderr
    assert UUID_A in ambiguous.stderr and UUID_B in ambiguous.stderr
    missing = dsh("events", "zzz", *flags)
    assert (
        missing.stderr.strip() == 'error SESSION_QUERY_SESSION_NOT_FOUND: session "zzz" not found'
    )


def test_events_take_a_limit_and_page_on_a_terminal(tmp_path):
    import pty

    root = tmp_path / "big"
    write_transcript(root, hdr("big", 1), [U(i, f"line {i}") for i in range(300)])
    flags = ["--persistence", f"jsonl:{root}"]
    limited = dsh("events", "big", *flags, "--limit", "5")
    rows = limited.stdout.splitlines()
    assert (
        rows[0] == "events of big: 300 events, 1970-01-01 00:00:00 UTC" and len(rows) == 2 + 5 + 1
    )
    assert rows[-1] == "… 295 more events (--limit N shows more)"
    assert len(json.loads(dsh("events", "big", *flags, "--limit", "5", "--json").stdout)) == 5
    # On a terminal the whole list goes to $PAGER, not the terminal.
    paged = tmp_path / "paged.txt"
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "80", "PAGER": f"cat > {paged}", "TERM": "xterm"}
    proc = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "events", "big", *flags],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=120,
    )
    os.close(follower)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    text = paged.read_text()
    assert text.count("user/message") == 300 and "line 299" in text
