"""Issue 25 finding 1 in Neovim (headless, the real server): a damaged log among healthy ones
leaves :DshSessions and :DshSearch working, and the client warns with vim.notify how many
sessions are unreadable, naming each (its id, what is wrong, its file)."""

from __future__ import annotations

import json

import pytest

from tests.builders import U, hdr, log_only, write_transcript
from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim

pytestmark = pytest.mark.skipif(
    not BINARIES, reason="nvim is not installed (make test installs it: mk/nvim.mk)"
)

WARN = 3  # vim.log.levels.WARN

SCENARIO = r"""
local sessions = cmd("DshSessions")
wait()
vim.wait(5000, function() return #R.notes > 0 end, 20)
snap("sessions", sessions)
R.after_sessions = #R.notes
tree.refresh(sessions)
wait()
vim.wait(1000, function() return false end, 50)
R.after_refresh = #R.notes
vim.cmd("silent! only")
snap("search", cmd("DshSearch needle"))
vim.wait(5000, function() return #R.notes > R.after_refresh end, 20)
"""


@pytest.fixture(scope="module", params=BINARIES or ["nvim"])
def nvim(request):
    return request.param


def test_sessions_and_search_warn_about_unreadable_sessions(nvim, tmp_path):
    root = tmp_path / "root"
    for n in range(2):
        write_transcript(root, hdr(f"ok-{n}", 1_700_000_000_000 + n, cwd="/w"), [U(0, "needle")])
    bad = write_transcript(root, hdr("bad", 1_700_000_000_009, cwd="/w"), [U(0, "needle")])
    end = log_only("turn/end", 9, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
    bad.write_text(bad.read_text() + "{not json\n" + json.dumps(end) + "\n")
    headless = write_transcript(root, hdr("headless", 1_700_000_000_010, cwd="/w"), [U(0, "x")])
    headless.write_text("{broken\n" + headless.read_text().split("\n", 1)[1])
    result = run_nvim(
        nvim,
        tmp_path / "nvim",
        SCENARIO,
        server_args=["--persistence", "none"],
        init={
            "persistence": f"jsonl:{root}",
            "index": ":memory:",
            # no warm-up: its reconcile would name the damaged log before the search does
            "search": {"warmUp": False},
        },
    )
    notes = result["notes"]
    # the listing skipped the damaged header: one warning, not repeated by a refresh
    assert result["after_sessions"] == result["after_refresh"] == 1, notes
    assert notes[0]["level"] == WARN
    assert notes[0]["msg"].splitlines() == [
        "dsh-query: 1 unreadable session left out (damaged logs):",
        f"  headless: corrupt session log: header line is not valid JSON ({headless})",
    ]
    assert any("ok-0:" in line for line in result["snaps"]["sessions"])
    # the search works, and names the log it left out
    assert any("ok-1 #0" in line for line in result["snaps"]["search"]), result["snaps"]["search"]
    assert notes[-1]["level"] == WARN
    assert notes[-1]["msg"].splitlines() == [
        "dsh-query: 1 unreadable session left out (damaged logs):",
        f"  bad: corrupt session log: unparsable committed event at line 2 ({bad})",
    ]
