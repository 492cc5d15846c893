"""Issue 25, finding 3: the CLI at real size, on real Claude Code transcripts (tests/fixtures/real,
used as they are), in 80- and 200-column terminals.

The home is laid out as Claude Code lays out a session with sub-agents: the trunk at
``projects/<slug>/<session id>.jsonl`` and two sub-agents under ``<session id>/subagents/``, one
with the 7-hex-digit agent id the trunk's own Task call names and one with the 17-character id of
current Claude Code (a 60-character session id, as in the issue).
"""

from __future__ import annotations

import json
import os
import pathlib
import pty
import re
import shutil
import subprocess
import sys

import pytest

from tests.builders import A, U, hdr, log_only, write_transcript
from tests.cli.cli_helpers import dsh, fits
from tests.import_helpers import REAL, isolated_env

pytestmark = [pytest.mark.wire, pytest.mark.slow]

TRUNK = "491e126e-1e71-469c-ade2-fcc8af567c74"  # the sessionId inside marot-spotter-subagent
AGENT = f"{TRUNK}/agent-afb92ff"  # the agentId its Task call reports
LONG_AGENT = f"{TRUNK}/agent-a4d56e0f1b2c3d4e5"
SHORT = "55604662-cf2a-4331-851a-ec234028f8ca"  # marot-spotter-short
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def claude_home(root: pathlib.Path) -> pathlib.Path:
    home = root / "claude"
    project = home / "projects" / "-home-marco-projects-spotter"
    (project / TRUNK / "subagents").mkdir(parents=True)
    real = REAL / "claude-code"
    shutil.copy(real / "marot-spotter-subagent.jsonl", project / f"{TRUNK}.jsonl")
    shutil.copy(real / "marot-spotter-short.jsonl", project / f"{SHORT}.jsonl")
    shutil.copy(
        real / "marot-spotter-tool_heavy.jsonl",
        project / TRUNK / "subagents" / f"{LONG_AGENT[37:]}.jsonl",
    )
    shutil.copy(
        real / "marot-spotter-short.jsonl", project / TRUNK / "subagents" / f"{AGENT[37:]}.jsonl"
    )
    shutil.copy(real / "simonw-sample_session.jsonl", project)
    return home


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("real-size")
    claude_home(root)
    return root


def run(home: pathlib.Path, *args: str, columns: int | None = 80, **kw):
    result = dsh(
        *args, "--persistence", f"claude:{home / 'claude'}", home=home, columns=columns, **kw
    )
    assert result.returncode == 0, result.stderr
    if columns is not None:
        assert fits(result.stdout, columns), result.stdout
    return result.stdout


def rows(out: str) -> dict[str, list[str]]:
    """Table rows by their first cell."""
    return {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.strip()}


def test_sessions_at_80_columns_keep_id_agent_created_and_title(home):
    out = run(home, "sessions")
    lines = out.splitlines()
    assert lines[0] == "5 sessions (newest first)"
    assert lines[1].split() == ["id", "agent", "created", "(UTC)", "title"]
    shown = rows(out)
    # Sub-agent ids show as <parent>…/agent-<a prefix>; the parent as its own short prefix.
    assert (
        "491e126e" in shown and "491e126e…/agent-a4d5" in shown and "491e126e…/agent-afb9" in shown
    )
    assert " ".join(shown["491e126e"][4:]) == "create the beads"
    wide = run(home, "sessions", columns=200)
    assert wide.splitlines()[1].split() == [
        "id",
        "agent",
        "created",
        "(UTC)",
        "state",
        "title",
        "parent",
        "cwd",
    ]
    assert rows(wide)["491e126e…/agent-a4d5"][-2:] == ["491e126e", "/home/marco/projects/spotter"]
    assert run(home, "sessions", "--limit", "2").splitlines()[0] == "2 of 5 sessions (newest first)"
    assert run(home, "sessions", "--agent", "codex") == "none of 5 sessions match\n"


def test_sessions_json_carries_the_title(home):
    records = json.loads(run(home, "sessions", "--json", columns=None))
    by_id = {r["header"]["id"]: r for r in records}
    assert by_id[TRUNK]["title"] == "create the beads"
    assert set(by_id[TRUNK]) == {"header", "live", "persisted", "title"}


def test_a_parent_is_reached_by_a_short_prefix_and_its_sub_agents_by_their_shown_form(home):
    for prefix in ("491e", "491e126e"):
        events = json.loads(run(home, "events", prefix, "--json", "--limit", "1", columns=None))
        assert events[0]["sessionId"] == TRUNK
    agent = json.loads(
        run(home, "events", "491e126e…/agent-a4d5", "--json", "--limit", "1", columns=None)
    )
    assert agent[0]["sessionId"] == LONG_AGENT
    lineage = run(home, "trace", "491e")
    assert "491e126e…/agent-afb9" in lineage and "◀ this session" in lineage.splitlines()[0]


def test_export_takes_a_prefix(home, tmp_path):
    target = tmp_path / "trunk.zip"
    result = dsh(
        "export",
        "491e",
        "-o",
        str(target),
        "--persistence",
        f"claude:{home / 'claude'}",
        home=home,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(target) and target.stat().st_size > 0


@pytest.mark.parametrize("columns", [80, 200])
def test_events_show_tool_calls_with_their_arguments_and_reasoning_as_a_word(home, columns):
    out = run(home, "events", "491e", "--skip-type", "claude/*", columns=columns)
    lines = out.splitlines()
    assert lines[0].startswith("events of 491e126e: 93 of 141 events, 2026-02-10 21:54:15–")
    assert lines[1] == "shown: --skip-type claude/*"
    table = rows(out)
    assert table["11"][1:3] == ["tool/call", "log-only"]
    assert "WebFetch: https://github.com/" in out
    assert "Bash: bd create --title=" in out
    assert "(reasoning)" in out and "claude/progress" not in out
    assert all(line.split()[1] != "claude/progress" for line in lines[3:])


def test_events_filter_by_type_and_class_and_json_carries_the_text(home):
    calls = json.loads(
        run(
            home,
            "events",
            "491e",
            "--type",
            "tool/*",
            "--class",
            "log-only",
            "--json",
            columns=None,
        )
    )
    assert calls and {e["type"] for e in calls} == {"tool/call"}
    assert {e["surface"] for e in calls} == {"log-only"}
    bash = [e for e in calls if e["text"].startswith("Bash: ")]
    assert bash and all(len(e["text"]) > 20 for e in bash)  # the command, uncut
    everything = json.loads(run(home, "events", "491e", "--json", columns=None))
    assert len(everything) == 141
    assert any(e.get("text") == "(reasoning)" for e in everything)


def test_read_shows_the_class_of_every_event(home):
    out = run(home, "read", "491e", "11", "--before", "1", "--after", "1")
    heads = [line for line in out.splitlines() if line.startswith("#")]
    assert [h.split()[:3] for h in heads] == [
        ["#10", "assistant/message", "current"],
        ["#11", "tool/call", "log-only"],
        ["#12", "assistant/message", "current"],
    ]
    assert "◀ target" in heads[1]
    window = json.loads(run(home, "read", "491e", "11", "--after", "1", "--json", columns=None))
    assert [e["surface"] for e in window["events"]] == ["log-only", "current"]


def test_surface_cuts_to_the_terminal_and_full_prints_every_message_whole(home):
    cut = run(home, "surface", "491e")
    assert cut.splitlines()[0] == "surface of 491e126e: 48 events in context, as of seq 140"
    full = run(home, "surface", "491e", "--full", columns=None)
    assert "Maybe there are igniter scripts?" in full  # the fourth line of message #4
    longest = max(len(line) for line in full.splitlines())
    assert longest > 200  # nothing cut


@pytest.mark.parametrize("columns", [80, 200])
def test_search_counts_its_hits_and_highlights_the_match(home, columns):
    one = run(home, "search", "credo", columns=columns)
    assert one.splitlines()[0] == 'search "credo": 1 matching session'
    assert "«Credo»" in one.splitlines()[2] or "«credo»" in one.splitlines()[2]
    paged = run(
        home,
        "search",
        "phoenix",
        "--session",
        "491e126e…/agent-a4d5",
        "--limit",
        "2",
        columns=columns,
    )
    assert paged.splitlines()[0] == 'search "phoenix": 2 matching events on page 1; more: --page 2'
    assert all("«" in line and "»" in line for line in paged.splitlines()[2:])
    second = run(
        home,
        "search",
        "phoenix",
        "--session",
        "491e126e…/agent-a4d5",
        "--limit",
        "2",
        "--page",
        "2",
        columns=columns,
    )
    assert second.splitlines()[0].startswith('search "phoenix": 2 matching events on page 2')
    assert seqs(paged) and seqs(second) and not set(seqs(paged)) & set(seqs(second))
    if columns == 80:  # a printed cursor: the hub that issued it takes it back (hub.md §3); a
        # private server of a later command did not issue it, and says the way out
        page = json.loads(run(home, "search", "phoenix", "--limit", "1", "--json", columns=None))
        resume = ["search", "phoenix", "--limit", "1", "--cursor", page["nextCursor"]]
        store = ["--persistence", f"claude:{home / 'claude'}"]
        shared = dsh(*resume, *store, home=home)
        assert shared.returncode == 0, shared.stderr
        assert shared.stdout.startswith('search "phoenix": 1 matching session on page 2')
        again = dsh(*resume, *store, "--no-hub", home=home)
        assert again.returncode == 2 and again.stderr.strip().endswith("use --page N)")


def seqs(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines()[2:]]


def test_colour_follows_the_flag_and_no_color(home, tmp_path):
    always = run(home, "sessions", "--color", "always")
    assert ANSI.search(always) and "491e126e" in ANSI.sub("", always)
    assert not ANSI.search(run(home, "sessions", "--color", "never"))
    assert not ANSI.search(run(home, "sessions"))  # auto, to a pipe
    searched = run(home, "search", "credo", "--color", "always")
    assert "\x1b[1;7m«" in searched  # the match is styled and marked

    def on_a_terminal(**env: str) -> str:
        paged = tmp_path / "paged.txt"
        leader, follower = pty.openpty()
        environment = {**isolated_env(home), "COLUMNS": "80", "PAGER": f"cat > {paged}", **env}
        environment["XDG_CACHE_HOME"] = str(home / "cache")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "dsh_query_server.cli",
                "sessions",
                "--persistence",
                f"claude:{home / 'claude'}",
            ],
            stdout=follower,
            stderr=subprocess.PIPE,
            env=environment,
            timeout=120,
        )
        os.close(follower)
        os.close(leader)
        assert proc.returncode == 0, proc.stderr
        return paged.read_text()

    assert ANSI.search(on_a_terminal())
    assert not ANSI.search(on_a_terminal(NO_COLOR="1"))


def test_a_header_only_log_prints_no_empty_fields(tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("empty", 1, cwd="/w"), [])
    flags = ["--persistence", f"jsonl:{root}"]
    for command in (["events", "empty"], ["surface", "empty"], ["trace", "empty"], ["sessions"]):
        result = dsh(*command, *flags, home=tmp_path, columns=80)
        assert result.returncode == 0, result.stderr
        assert "None" not in result.stdout and "()" not in result.stdout
        assert "  UTC" not in result.stdout and "(0," not in result.stdout
    events = dsh("events", "empty", *flags, home=tmp_path).stdout
    assert events.strip() == "events of empty: none yet (the log holds only its header)"
    surface = dsh("surface", "empty", *flags, home=tmp_path).stdout
    assert surface.strip() == "surface of empty: empty (the log holds no events yet)"


def test_a_compaction_trace_prints_seq_ranges(tmp_path):
    root = tmp_path / "root"
    kept = list(range(0, 80, 2))  # 40 messages with a log-only event between each two
    events = []
    for seq in range(80):
        events.append(
            U(seq, f"message {seq}") if seq % 2 == 0 else log_only("todo/write", seq, {"todos": []})
        )
    events.append(A(80, "summary", op={"op": "replace", "start": 0, "end": 78}, src=kept))
    write_transcript(root, hdr("long", 1, cwd="/w"), events)
    result = dsh("trace", "long", "80", "--persistence", f"jsonl:{root}", home=tmp_path, columns=80)
    assert result.returncode == 0, result.stderr
    table = {line[:18].strip(): line[19:].strip() for line in result.stdout.splitlines()[2:]}
    assert table["replaced events"] == "#0–#78, 40 events in 40 runs"
    assert table["sources"] == "#0–#78, 40 events in 40 runs"
    assert table["replaced by"] == "—"


def test_every_command_has_complete_help(tmp_path):
    from dsh_query_server.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001
    assert isinstance(sub.choices, dict)
    for name, command in sub.choices.items():
        for action in command._actions:  # noqa: SLF001
            if action.dest == "help" or not command.add_help:
                continue
            assert action.help, f"dsh-query {name}: {action.dest} has no help"
    for name in ("mcp", "export", "sync", "postgres"):
        result = dsh(name, "--help", home=tmp_path)
        assert result.returncode == 0 and "usage: dsh-query" in result.stdout, result.stderr
        options = [line for line in result.stdout.splitlines() if line.startswith("  -")]
        assert options, name
    mcp = dsh("mcp", "--help", home=tmp_path, columns=200).stdout
    assert "--demo" in mcp and "--workspace DIR" in mcp

    from dsh_query_server.mcp.config import parser as mcp_parser

    for action in mcp_parser()._actions:  # noqa: SLF001
        assert action.help, f"dsh-query mcp: {action.dest} has no help"
