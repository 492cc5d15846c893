""":DshShow (views.md §3.3) in a real headless Neovim against the real server, on real Claude Code
transcripts: the importers.md §1.5 worked example (a rewind and a compaction) and a real
tool-heavy transcript (long tool output). Checked: the class of every message as a highlight
group and as the word, the sparkline per turn with the compaction marked, the dividers, and the
closed folds (log-only runs, tool output past 6 lines)."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim
from tests.import_helpers import REAL, SPEC

pytestmark = pytest.mark.skipif(not BINARIES, reason="nvim is not installed")

BODY = r"""
local ns = vim.api.nvim_get_namespaces()["dsh_query_show"]
local function capture(name, buf)
  snap(name, buf)
  local hls = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local line = vim.api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1]
    hls[#hls + 1] = { m[2], line:sub(m[3] + 1, m[4].end_col), m[4].hl_group }
  end
  R[name .. "_hls"] = hls
  local folds, l, last = {}, 1, vim.api.nvim_buf_line_count(buf)
  while l <= last do
    local start = vim.fn.foldclosed(l)
    if start ~= -1 then
      folds[#folds + 1] = { start - 1, vim.fn.foldclosedend(l) - 1 }
      l = vim.fn.foldclosedend(l) + 1
    else
      l = l + 1
    end
  end
  R[name .. "_folds"] = folds
end
capture("demo", cmd("DshShow claude-demo"))
vim.cmd("silent! only")
capture("heavy", cmd("DshShow marot-spotter-tool_heavy"))
vim.cmd("silent! only")
snap("missing", cmd("DshShow no-such-session"))
"""


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nvim-show")
    home = shutil.copytree(SPEC / "claude", tmp / "claude")
    (home / "projects" / "-real").mkdir()
    shutil.copy(
        REAL / "claude-code" / "marot-spotter-tool_heavy.jsonl", home / "projects" / "-real"
    )
    return run_nvim(
        BINARIES[0],
        tmp / "nvim",
        BODY,
        server_args=["--persistence", "none"],
        init={"persistence": f"claude:{home}", "index": ":memory:", "search": {"openAt": "never"}},
    )


def line_index(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


def groups_on(result: dict, name: str, line: int) -> dict[str, str]:
    """{highlighted text: group} on one 0-based line."""
    return {text: group for at, text, group in result[f"{name}_hls"] if at == line}


def test_every_message_shows_its_class_as_a_highlight_group_and_the_word(shown):
    lines = shown["snaps"]["demo"]
    assert lines[0] == 'dsh-query · Session "claude-demo" · File cleanup'
    assert lines[1].startswith("claude-code · created 2026-01-01 00:00 UTC · 38 events")
    heads = [re.match(r"▌ \S+(?: result)? #(\d+)", line) for line in lines]
    assert [int(h.group(1)) for h in heads if h] == [
        2, 5, 6, 9, 12, 16, 18, 22, 24, 26, 29, 33, 35
    ]  # fmt: skip
    for seq, word, group in (
        (16, "shadowed", "DshQueryShadowed"),
        (29, "current", "DshQueryCurrent"),
    ):
        at = line_index(lines, f"▌ user #{seq} · ")
        assert lines[at].startswith(f"▌ user #{seq} · {word} · ")
        assert groups_on(shown, "demo", at) == {"▌": group, word: group, "user": "DshQueryUser"}
    at = line_index(lines, "▌ assistant #35 · ")
    assert lines[at] == "▌ assistant #35 · current · 00:00:51 · step 6 · claude-x"
    assert lines[at + 1] == "  You're welcome."
    run = line_index(lines, "▸ log-only · 2 events (#0–#1)")
    assert groups_on(shown, "demo", run)["log-only"] == "DshQueryLogOnly"


def test_the_context_per_turn_and_the_dividers(shown):
    lines = shown["snaps"]["demo"]
    turns = [line for line in lines if line.startswith("  turn ")]
    assert [t.split()[1] for t in turns] == ["1", "2", "3", "4"]
    assert all("(estimate)" in t for t in turns)  # this transcript records no usage
    assert re.match(r"  turn 1    [▁-█]{3} ", turns[0])  # three responses in turn 1
    # the compaction (#29) is marked on turn 4, whose response #35 came after it
    assert turns[3].endswith("▲ compaction: 8 events, #2–#26, replaced by #29")
    at = lines.index(turns[3])
    marks = groups_on(shown, "demo", at)
    assert marks["▲ compaction: 8 events, #2–#26, replaced by #29"] == "DshQueryDivider"
    assert set(marks.values()) <= {"DshQueryEstimate", "DshQueryDivider"}
    divider = lines.index("── Compaction: 8 events, #2–#26, replaced by #29 ──")
    assert lines[divider + 1] == "   surface 8 events → 1 event, ≈45 → ≈9 tokens (estimate)"
    assert lines[divider + 3].startswith("▌ user #29 · current")


def test_log_only_runs_and_long_tool_output_are_closed_folds(shown):
    lines = shown["snaps"]["demo"]
    folds = shown["demo_folds"]
    run = line_index(lines, "▸ log-only · 3 events (#13–#15)")
    assert [run, run + 3] in folds  # the summary line and one line per event
    assert lines[run + 1 : run + 4] == [
        "    #13 step/end · log-only",
        "    #14 turn/end · log-only",
        "    #15 turn/start · log-only",
    ]
    heavy = shown["snaps"]["heavy"]
    result = line_index(heavy, "▌ tool result #55 · current")
    output = [f for f in shown["heavy_folds"] if f[0] == result + 7]
    assert output, shown["heavy_folds"]
    assert heavy[result + 1].startswith("       1→import")
    assert output[0][1] - output[0][0] + 1 == 81  # 87 lines of output, 6 shown


def test_a_missing_session_says_why(shown):
    text = shown["snaps"]["missing"]
    assert text[0] == 'dsh-query: cannot show session "no-such-session"'
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in text[1]
