"""The dsh-query command line, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .builders import hdr, write_transcript
from .builders import A, R, U, log_only


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    # The CLI's default store and search index live under XDG dirs: keep them out of $HOME.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state-home"))


def dsh(*args, env=None, cwd=None):
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    result = subprocess.run([sys.executable, "-m", "dsh_query_server.cli", *args], capture_output=True,
                            text=True, timeout=120, env=env, cwd=cwd)
    return result


def test_demo_shows_what_the_service_sees(tmp_path):
    result = dsh("demo", env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "7 sessions" in out and "fix-flaky-tests" in out and "release-notes-2-4" in out
    assert "live+persisted" in out and "shadowed" in out and "current" in out and "log-only" in out
    assert "read-refunds (live, sub-agent)" in out  # two levels of sub-agents in the lineage tree
    assert "[output truncated: 1 failure, timeout]" in out  # content is never read as markup
    assert 'search "fake clock": try-freezegun' in out
    assert not (tmp_path / "state").exists()  # the demo keeps its store in a temporary directory


def make_root(tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("one", 1, cwd="/w"), [
        log_only("turn/start", 0, {"turn": 1}), U(1, "find the needle"), A(2, "here", op=R(1, 1), src=[1]),
        log_only("turn/end", 3, {"turn": 1, "reason": {"kind": "completed"}})])
    write_transcript(root, hdr("two", 2, parentSession="one"), [U(0, "[bold]not markup[/bold]")])
    return root


def test_client_commands_as_json(tmp_path):
    uri = f"jsonl:{make_root(tmp_path)}"
    sessions = json.loads(dsh("sessions", "--persistence", uri, "--json").stdout)
    assert [s["header"]["id"] for s in sessions] == ["two", "one"]
    events = json.loads(dsh("events", "one", "--persistence", uri, "--json").stdout)
    assert [e["surface"] for e in events] == ["log-only", "shadowed", "current", "log-only"]
    window = json.loads(dsh("read", "one", "2", "--before", "1", "--persistence", uri, "--json").stdout)
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
    mounted = dsh("mount", "jsonl:root?readOnly=true", cwd=tmp_path)  # relative to the working directory
    assert mounted.returncode == 0, mounted.stderr
    assert f"mounted jsonl:{root}?readOnly=true (read-only)" in mounted.stdout and "2 sessions" in mounted.stdout
    missing = dsh("events", "nope", "--persistence", f"jsonl:{root}")
    assert missing.returncode == 2
    assert missing.stderr.strip() == 'error SESSION_QUERY_SESSION_NOT_FOUND: session "nope" not found'
    assert "Traceback" not in missing.stderr
