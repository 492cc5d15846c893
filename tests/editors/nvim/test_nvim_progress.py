"""Work-done progress in a real headless Neovim (docs/protocol.md §8): the server creates a token
(Neovim declares window.workDoneProgress), reports the index build, and the plugin's `$/progress`
handler keeps it for `require('dsh_query').progress()`, firing `User DshQueryProgress`; Neovim's
own handler still sees every notification. The hub runs with ``DSH_QUERY_PROGRESS_DELAY_MS=0``
and without the warm-up, so the search itself builds the index and reports at once."""

from __future__ import annotations

import pytest

from tests.builders import U, hdr, write_transcript
from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim
from tests.hub.hub_helpers import short_run_dir, using_hubs

pytestmark = pytest.mark.skipif(
    not BINARIES, reason="nvim is not installed (make test installs it: mk/nvim.mk)"
)

SCENARIO = r"""
local seen = {}
vim.cmd("autocmd User DshQueryProgress lua table.insert(_G.DSH_SEEN, require('dsh_query').progress())")
_G.DSH_SEEN = seen
R.before = dq.progress()
snap("search", cmd("DshSearch needle"))
R.checks.ended = vim.wait(10000, function() return dq.progress() == "" and #seen > 0 end, 20)
R.seen = seen
R.after = dq.progress()
local client = vim.lsp.get_client_by_id(dq.info().client_id)
R.native = client and client.messages and client.messages.progress and vim.tbl_count(client.messages.progress) or -1
"""


@pytest.mark.parametrize("nvim", BINARIES)
def test_search_progress_reaches_the_handler(nvim, tmp_path):
    root = tmp_path / "root"
    for n in range(40):
        write_transcript(root, hdr(f"s{n:03d}", cwd="/proj"), [U(0, f"needle number {n}")])
    run_dir = short_run_dir()
    with using_hubs(run_dir):
        result = run_nvim(
            nvim,
            tmp_path,
            SCENARIO,
            server_args=["--persistence", "none"],
            init={
                "persistence": f"jsonl:{root}",
                "index": ":memory:",
                "search": {"warmUp": False},
            },
            env={"DSH_QUERY_PROGRESS_DELAY_MS": "0", "XDG_RUNTIME_DIR": run_dir},
        )
    assert result["before"] == ""
    assert result["checks"]["ended"], result["seen"]
    seen = [s for s in result["seen"] if s]
    # Before the server runs, the status says it is starting (it cannot report yet).
    assert seen[0] == "dsh-query: starting the server", seen
    assert any(s.startswith("dsh-query searchSessions") for s in seen), seen
    assert any("indexing" in s and s.endswith("%)") for s in seen), seen
    assert result["after"] == ""
    # Neovim's own handler saw the same tokens (it keeps them in client.messages.progress)
    assert result["native"] >= 1
    assert any("needle" in line for line in result["snaps"]["search"])


WARM_SCENARIO = r"""
local seen = {}
vim.cmd("autocmd User DshQueryProgress lua table.insert(_G.DSH_SEEN, require('dsh_query').progress())")
_G.DSH_SEEN = seen
snap("sessions", cmd("DshSessions"))
R.checks.warmed = vim.wait(15000, function()
  for _, s in ipairs(seen) do
    if s:find("^dsh%-query warmUp") then return dq.progress() == "" end
  end
  return false
end, 20)
R.seen = seen
snap("search", cmd("DshSearch needle"))
"""


def _home(root) -> None:
    # Enough transcripts that the warm-up still runs when Neovim has initialized (it starts
    # when persistence is mounted, at initialize; a client that connects after its end is
    # shown nothing).
    for n in range(1500):
        write_transcript(root, hdr(f"s{n:04d}", cwd="/proj"), [U(0, f"needle number {n}")])


@pytest.mark.parametrize("nvim", BINARIES)
def test_the_warm_up_is_shown_and_changes_no_answer(nvim, tmp_path):
    """Started with persistence and the warm-up on, Neovim shows the warm-up's progress through
    the handler (begin to end, without any request of its own), and the search after it
    answers exactly as a search that built the index itself (semantics.md §6.5 [ours])."""
    root = tmp_path / "root"
    _home(root)
    results = {}
    for warm in (True, False):
        run_dir = short_run_dir()
        with using_hubs(run_dir):
            results[warm] = run_nvim(
                nvim,
                tmp_path / f"warm-{warm}",
                WARM_SCENARIO if warm else "snap('search', cmd('DshSearch needle'))",
                server_args=["--persistence", "none"],
                init={
                    "persistence": f"jsonl:{root}",
                    "index": ":memory:",
                    "search": {"warmUp": warm},
                },
                env={"DSH_QUERY_PROGRESS_DELAY_MS": "0", "XDG_RUNTIME_DIR": run_dir},
            )
    shown = results[True]
    assert shown["checks"]["warmed"], shown["seen"]
    warm_up = [s for s in shown["seen"] if s.startswith("dsh-query warmUp")]
    assert any("indexing" in s and s.endswith("%)") for s in warm_up), shown["seen"]
    assert shown["snaps"]["search"] == results[False]["snaps"]["search"]
    assert sum("needle" in line for line in shown["snaps"]["search"]) >= 10
