"""Running one scenario in a real headless Neovim against the real server (the Neovim tests
share it: tests/editors/nvim/test_nvim.py, tests/editors/nvim/test_export_nvim.py)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PLUGIN = ROOT / "editor" / "nvim"
RUN_TIMEOUT = 40  # seconds for one nvim run (each wait inside is bounded too)
BEGIN, END = "@@DSH-NVIM-RESULT@@", "@@DSH-NVIM-END@@"


def nvim_binaries() -> list[str]:
    extra = os.environ.get("DSH_QUERY_TEST_NVIM")
    if extra:
        return [b for b in extra.split(os.pathsep) if b]
    found = shutil.which("nvim")
    return [found] if found else []


BINARIES = nvim_binaries()

# Lua run before every scenario: load the plugin the way a user would (runtimepath + plugin/),
# capture vim.notify, and give the scenario small helpers.
PRELUDE = r"""
local PLUGIN, CMD, INIT, FORCE = ...
local R = { snaps = {}, notes = {}, info = {}, checks = {} }
vim.o.lines, vim.o.columns = 200, 240
vim.opt.rtp:prepend(PLUGIN)
vim.cmd("runtime! plugin/dsh_query.lua")
vim.notify = function(msg, level) table.insert(R.notes, { msg = tostring(msg), level = level }) end
local dq = require("dsh_query")
local tree = require("dsh_query.tree")
dq.setup({ cmd = CMD, init_options = INIT, use_start_client = FORCE, tree_width = 120 })
R.has_lsp_start = vim.lsp.start ~= nil
R.version = vim.version and tostring(vim.version().major .. "." .. vim.version().minor .. "." .. vim.version().patch)
  or vim.fn.execute("version")

local function wait()
  if not dq.wait(15000) then error("timed out waiting for the server") end
end
local function snap(name, buf)
  buf = buf or vim.api.nvim_get_current_buf()
  R.snaps[name] = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return buf
end
local function cmd(c) vim.cmd(c); wait(); return vim.api.nvim_get_current_buf() end
local function goto_line(buf, needle)
  local lnum = tree.find(buf, needle)
  if not lnum then error("no line with " .. needle .. " in " .. vim.api.nvim_buf_get_name(buf)) end
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { lnum, 0 })
  return lnum
end
local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
  wait()
end
"""

EPILOGUE = r"""
R.info = dq.info()
R.info.capabilities = nil
return R
"""


def finally_kill(proc: subprocess.Popen) -> None:
    """nvim stops its LSP clients on exit; kill what may be left of its process group anyway."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_nvim(
    nvim: str,
    tmp: pathlib.Path,
    body: str,
    *,
    server_args: list[str],
    init: dict | None = None,
    force_start_client: bool = False,
    env: dict[str, str] | None = None,
) -> dict:
    """Run one scenario; returns the decoded result (snaps, notes, info, ...). ``env``: extra
    environment (a hub's XDG_RUNTIME_DIR, say)."""
    tmp.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "dsh_query_server", *server_args]

    def lua(value) -> str:  # any JSON value as a Lua expression
        return "vim.fn.json_decode(" + json.dumps(json.dumps(value)) + ")"

    script = "\n".join(
        [
            "local SCENARIO = function(...)",
            PRELUDE,
            body,
            EPILOGUE,
            "end",
            f"local ok, result = xpcall(SCENARIO, debug.traceback, {lua(str(PLUGIN))}, {lua(cmd)},",
            f"  {lua(init) if init else 'vim.empty_dict()'}, {'true' if force_start_client else 'false'})",
            "local out = ok and result or { error = tostring(result) }",
            f"io.stdout:write('\\n' .. {lua(BEGIN)} .. vim.fn.json_encode(out) .. {lua(END)} .. '\\n')",
            "io.stdout:flush()",
            "vim.cmd('qa!')",
        ]
    )
    path = tmp / "scenario.lua"
    path.write_text(script)
    env = {**os.environ, **(env or {})}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (tmp / name.lower()).mkdir(exist_ok=True)
        env[name] = str(tmp / name.lower())
    env.pop("NVIM", None)
    env.pop("VIMINIT", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        [nvim, "--headless", "--clean", "-u", "NONE", "-i", "NONE", "-c", f"luafile {path}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # nvim and the server it started (same session)
        out, err = proc.communicate()
        pytest.fail(
            f"nvim did not finish within {RUN_TIMEOUT}s\nstdout: {out[-2000:]!r}\nstderr: {err[-2000:]!r}"
        )
    finally_kill(proc)
    text = out.decode("utf-8", "replace")
    match = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.S)
    assert match, (
        f"no result from nvim (rc {proc.returncode})\nstdout: {text[-3000:]}\nstderr: {err.decode()[-3000:]}"
    )
    result = json.loads(match.group(1))
    assert "error" not in result, result["error"]
    result["seconds"] = time.monotonic() - started
    result["stderr"] = err.decode("utf-8", "replace")
    # a Lua error in a callback does not stop the scenario; it only shows up here
    assert "Error executing" not in result["stderr"] and "E5108" not in result["stderr"], result[
        "stderr"
    ]
    return result
