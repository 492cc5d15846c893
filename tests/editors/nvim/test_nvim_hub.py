"""The Neovim client on the hub (hub.md §3, ``hub = true`` by default) in real headless Neovims:
Debian's 0.7.2 reaches the hub through the ``dsh-query hub connect`` stdio bridge (0.10+ opens
the socket itself). A session the first Neovim creates as a producer is live for a second one;
when the hub is killed, the second reconnects (a new hub is started) and refreshes its tree, where
the session, whose checkpoint the first acknowledged, is now persisted only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import write_transcript
from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim
from tests.hub.hub_helpers import alive, short_run_dir, using_hubs

pytestmark = pytest.mark.skipif(
    not BINARIES, reason="nvim is not installed (make test installs it: mk/nvim.mk)"
)

PRODUCER = r"""
dq.request("sessionStore/create", { header = { version = 0, id = "made-in-nvim-one", createdAt = 1764480000000 } })
dq.request("sessionStore/append", { sessionId = "made-in-nvim-one", events = { {
  type = "user/message", time = 1764480000000, surfaceOp = "append",
  data = { id = "u0", role = "user", content = { { type = "text", text = "typed in the first Neovim" } }, source = { kind = "user" } },
} } })
-- acknowledged: kept whatever happens to the hub (hub.md §4)
dq.request("sessionStore/checkpoint", { sessionId = "made-in-nvim-one" })
wait()
snap("sessions", cmd("DshSessions"))
"""

WATCHER = r"""
snap("sessions", cmd("DshSessions"))
local function hub_pid()
  local files = vim.fn.glob(vim.env.XDG_RUNTIME_DIR .. "/dsh-query/hub-*.json", false, true)
  if #files ~= 1 then return nil end
  local ok, info = pcall(vim.fn.json_decode, table.concat(vim.fn.readfile(files[1]), "\n"))
  return ok and info.pid or nil
end
R.killed = hub_pid()
vim.loop.kill(R.killed, 9)
R.checks.reconnected = vim.wait(30000, function()
  local pid = hub_pid()
  return pid ~= nil and pid ~= R.killed and dq.info().ready
end, 50)
-- refreshed by the reconnection itself: the session the first Neovim checkpointed into the root
-- is listed again, now persisted only (its live copy went with the killed hub)
R.checks.refreshed = vim.wait(15000, function()
  for _, line in ipairs(vim.api.nvim_buf_get_lines(vim.fn.bufnr("dsh-query://sessions"), 0, -1, false)) do
    if line:find("made-in-nvim-one", 1, true) then
      return line:find("persisted", 1, true) ~= nil and line:find("live", 1, true) == nil
    end
  end
  return false
end, 50)
wait()
snap("after", vim.fn.bufnr("dsh-query://sessions"))
R.new_hub = hub_pid()
"""


@pytest.fixture(scope="module", params=BINARIES or ["nvim"])
def nvim(request):
    return request.param


def test_two_neovims_share_one_hub_and_reconnect_after_it_dies(nvim, tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_transcript(
        root,
        {"version": 0, "id": "persisted-from-disk", "createdAt": 1_764_470_000_000},
        [
            {
                "type": "user/message",
                "time": 1_764_470_000_000,
                "surfaceOp": "append",
                "data": {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "text", "text": "on disk"}],
                    "source": {"kind": "user"},
                },
            }
        ],
    )
    run = short_run_dir()
    server_args = ["--persistence", f"jsonl:{root}"]
    init, env = {"index": ":memory:"}, {"XDG_RUNTIME_DIR": run}
    with using_hubs(run):
        first = run_nvim(
            nvim, tmp_path / "one", PRODUCER, server_args=server_args, init=init, env=env
        )
        assert first["info"]["hub"] is True and first["info"]["ready"] is True
        text = "\n".join(first["snaps"]["sessions"])
        assert "made-in-nvim-one" in text and "persisted-from-disk" in text
        hubs = list((Path(run) / "dsh-query").glob("hub-*.json"))
        assert len(hubs) == 1
        pid = json.loads(hubs[0].read_text())["pid"]
        assert alive(pid)  # the hub outlives the Neovim that started it

        second = run_nvim(
            nvim, tmp_path / "two", WATCHER, server_args=server_args, init=init, env=env
        )
        seen = "\n".join(second["snaps"]["sessions"])
        assert "made-in-nvim-one" in seen, seen  # live in the hub, for every client
        line = next(row for row in second["snaps"]["sessions"] if "made-in-nvim-one" in row)
        assert "live" in line and "persisted" in line
        assert second["killed"] == pid
        assert second["checks"]["reconnected"] is True, second["notes"]
        assert second["checks"]["refreshed"] is True, second["snaps"].get("after")
        assert second["new_hub"] not in (None, pid)
        notes = "\n".join(n["msg"] for n in second["notes"])
        assert "reconnecting" in notes
