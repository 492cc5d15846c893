"""``dsh-query show`` and ``dsh-query timeline`` (views.md §3 in the terminal), run as a user would,
on real Claude Code transcripts: the importers.md §1.5 worked example (a compaction and a rewind)
and a real tool-heavy transcript (long tool output). Output is checked at 80 and 200 columns."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from dsh_query_server.cli import show, timeline
from dsh_query_server.client import StdioClient
from tests.import_helpers import REAL, SPEC

pytestmark = [pytest.mark.wire, pytest.mark.slow]

HEAD = re.compile(r"^▌ (user|assistant|tool result) #(\d+)(?: \(([^)]*)\))? · (\S+)")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("cli-views")
    claude = shutil.copytree(SPEC / "claude", base / "claude")
    (claude / "projects" / "-real").mkdir()
    shutil.copy(
        REAL / "claude-code" / "marot-spotter-tool_heavy.jsonl", claude / "projects" / "-real"
    )
    return claude


def dsh(home: Path, *args: str, columns: int = 80, **env: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args, "--persistence", f"claude:{home}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "COLUMNS": str(columns),
            "XDG_STATE_HOME": str(home.parent / "state"),
            "XDG_CACHE_HOME": str(home.parent / "cache"),
            **env,
        },
    )
    assert result.returncode == 0, result.stderr
    return result


def fits(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    assert lines and max(cell_len(line) for line in lines) <= width
    assert "\x1b" not in text  # piped: no colour codes
    assert not any(line != line.rstrip() for line in lines)  # no padding left behind
    return lines


def heads(lines: list[str]) -> list[tuple[str, int, str, str]]:
    """(who, seq, notes, class) of every message's first line."""
    out = []
    for line in lines:
        m = HEAD.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), m.group(3) or "", m.group(4)))
    return out


@pytest.mark.parametrize("columns", [80, 200])
def test_show_the_whole_log_with_classes_and_dividers(home, columns):
    lines = fits(dsh(home, "show", "claude-demo", columns=columns).stdout, columns)
    assert lines[0] == "Session claude-demo · File cleanup"
    assert "38 events · 6 model responses · 2 compactions" in lines
    shown = heads(lines)
    # the conversation in seq order, each message with its class as a word
    assert [s for _, s, _, _ in shown] == [2, 5, 6, 9, 12, 16, 18, 22, 24, 26, 29, 33, 35]
    classes = {s: c for _, s, _, c in shown}
    assert {s for s, c in classes.items() if c == "current"} == {29, 33, 35}
    assert {s for s, c in classes.items() if c == "shadowed"} == {
        2,
        5,
        6,
        9,
        12,
        16,
        18,
        22,
        24,
        26,
    }
    assert ("user", 29, "compaction summary, replaces", "current") in shown
    # each replacement is a divider right before the event that made it
    divider = next(
        i for i, line in enumerate(lines) if "Compaction: 8 events, #2–#26, replaced by #29" in line
    )
    assert lines[divider + 1] == "surface 8 events → 1 event, ≈45 → ≈9 tokens (estimate)"
    assert HEAD.match(lines[divider + 3]) and " #29 " in lines[divider + 3]
    assert any("Compaction: 2 events, #16–#18, replaced by #22" in line for line in lines)
    # log-only events fold into one line per run, with the word
    folded = [line for line in lines if line.startswith("  ▸ ")]
    assert folded and all(line.startswith("  ▸ log-only · ") for line in folded)
    assert "  ▸ log-only · 2 events (#0–#1): claude/file-history-snapshot, turn/start" in lines
    # Markdown content and tool calls
    assert '  → Bash {"command":"ls"}' in lines


def test_show_context_is_what_the_model_sees_now(home):
    lines = fits(dsh(home, "show", "claude-demo", "--context").stdout, 80)
    assert any(line.startswith("What the model sees now: 3 events") for line in lines)
    assert [(s, c) for _, s, _, c in heads(lines)] == [
        (29, "current"),
        (33, "current"),
        (35, "current"),
    ]
    assert not any(line.startswith("  ▸ ") for line in lines)  # only the surface


def test_show_at_a_point_is_the_surface_through_it(home):
    at24 = fits(dsh(home, "show", "claude-demo", "--at", "24").stdout, 80)
    assert any(line.startswith("The surface through #24: 7 events, ≈") for line in at24)
    assert [s for _, s, _, _ in heads(at24)] == [2, 5, 6, 9, 12, 22, 24]
    assert any("Compaction: 2 events, #16–#18, replaced by #22" in line for line in at24)
    assert not any("replaced by #29" in line for line in at24)  # not yet happened
    # what the model saw when it wrote #24
    at23 = fits(dsh(home, "show", "claude-demo", "--at", "23").stdout, 80)
    assert [s for _, s, _, _ in heads(at23)] == [2, 5, 6, 9, 12, 22]
    as_json = json.loads(dsh(home, "show", "claude-demo", "--at", "23", "--json").stdout)
    assert as_json["view"] == "at" and as_json["throughSeq"] == 23
    assert [r["event"]["seq"] for r in as_json["rows"] if "event" in r] == [2, 5, 6, 9, 12, 22]


def test_show_folds_long_tool_output_and_takes_id_prefixes(home):
    lines = fits(dsh(home, "show", "marot-spotter-tool").stdout, 80)
    assert lines[0].startswith("Session marot-spotter-tool_heavy · ")
    result = lines.index(next(line for line in lines if HEAD.match(line) and " #55 " in line))
    shown = lines[result + 1 : result + 9]
    assert shown[0].startswith("       1→import") and len(shown) == 8
    assert shown[6] == "  … 81 more lines folded (dsh-query read marot-spotter-tool_heavy 55)"


def test_show_on_a_terminal_is_coloured_paged_and_keeps_the_words(home, tmp_path):
    import pty

    paged = tmp_path / "paged.txt"
    leader, follower = pty.openpty()
    env = {
        **os.environ,
        "COLUMNS": "80",
        "PAGER": f"cat > {paged}",
        "TERM": "xterm",
        "XDG_STATE_HOME": str(home.parent / "state"),
        "XDG_CACHE_HOME": str(home.parent / "cache"),
    }
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "show", "claude-demo"]
        + ["--persistence", f"claude:{home}"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=120,
    )
    os.close(follower)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    text = paged.read_text()
    assert "\x1b[32mcurrent" in text and "\x1b[31mshadowed" in text  # green, red
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "▌ user #16 · shadowed" in plain and "▌ user #33 · current" in plain


@pytest.mark.parametrize("columns", [80, 200])
def test_timeline_charts_the_context_with_compactions_marked(home, columns):
    lines = fits(dsh(home, "timeline", "claude-demo", columns=columns).stdout, columns)
    assert lines[0] == "Context of claude-demo · 38 events · 6 model responses"
    bars = [line for line in lines if " ┤" in line]
    assert len(bars) == timeline.HEIGHT and all("█" not in line for line in bars)  # no usage here
    assert any("▒" in line for line in bars)
    assert "▒ ≈ tokens (estimate: no usage recorded)" in lines
    axis = next(i for i, line in enumerate(lines) if " └" in line)
    marks = lines[axis + 1]
    assert marks.split() == ["1", "2"]
    # each mark sits under the first response after its replacement: #24 (step 5) after the
    # rewind at #22, #35 (step 6) after the compaction at #29; steps are 6 columns wide here
    # after a 4-column gutter ("19 ┤")
    assert (marks.index("1"), marks.index("2")) == (4 + 4 * 6, 4 + 5 * 6)
    assert "1 ▲ compaction: 2 events, #16–#18, replaced by #22" in lines
    assert "2 ▲ compaction: 8 events, #2–#26, replaced by #29" in lines
    assert "    surface ≈45 → ≈9 tokens (estimate)" in lines
    assert "peak: step 4 (#18), ≈19 tokens (estimate)" in lines


def test_timeline_of_recorded_usage_and_its_json(home):
    lines = fits(dsh(home, "timeline", "marot-spotter-tool_heavy").stdout, 80)
    assert any("█" in line for line in lines)
    assert lines[-1].startswith("peak: step 9 (#56), ≈") and lines[-1].endswith(
        "tokens (estimate), recorded context 27,666"
    )
    assert "█ recorded context (tokens)" in " ".join(lines)
    as_json = json.loads(dsh(home, "timeline", "marot-spotter-tool_heavy", "--json").stdout)
    env = {**os.environ, "XDG_STATE_HOME": str(home.parent / "state")}
    with StdioClient(["--persistence", f"claude:{home}"], env=env) as client:
        direct = client.request(
            "sessionQuery/readTimeline", {"sessionId": "marot-spotter-tool_heavy"}
        )
    assert as_json == direct


def test_rendering_a_page_in_colour_keeps_every_word(home):
    """show.render with colour: the class words are there with their colours."""
    env = {**os.environ, "XDG_STATE_HOME": str(home.parent / "state")}
    with StdioClient(["--persistence", f"claude:{home}"], env=env) as client:
        page = show.read_page(client, "claude-demo", context=False, at=None)
    coloured = show.render(page, 80, colour=True)
    plain = show.render(page, 80, colour=False)
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    assert "\x1b[31mshadowed" in coloured and "\x1b[90mlog-only" in coloured


def test_the_demo_ends_with_the_chart_the_surface_and_the_page(tmp_path):
    env = {
        **os.environ,
        "COLUMNS": "80",
        "TMPDIR": str(tmp_path),  # where the demo's page goes
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    chart = lines.index(
        next(line for line in lines if "dsh-query timeline fix-flaky-tests" in line)
    )
    surface = lines.index(
        next(line for line in lines if "dsh-query show fix-flaky-tests --context" in line)
    )
    page = lines.index(
        next(line for line in lines if "dsh-query export fix-flaky-tests --html" in line)
    )
    assert chart < surface < page == len(lines) - 3
    assert lines[chart + 1] == "Context of fix-flaky-tests · 25 events · 4 model responses"
    assert "1 ▲ compaction: 4 events, #1–#13, replaced by #18" in lines[chart:surface]
    assert "█ recorded context (tokens)" in lines[chart:surface]  # the demo records usage
    shown = heads(lines[surface:page])
    assert [(s, c) for _, s, _, c in shown] == [
        (18, "current"),
        (19, "current"),
        (22, "current"),
        (23, "current"),
    ]
    path = Path(lines[-1].strip())
    assert path.parent.parent == tmp_path and path.name == "dsh-session-fix-flaky-tests.html"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and '"sessionId":"fix-flaky-tests"' in text
