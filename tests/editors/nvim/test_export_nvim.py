"""Neovim's :DshExport in a real headless Neovim against the real server (tools.md §2.4)."""

from __future__ import annotations

import json
import pathlib
import zipfile

import pytest

from tests.editors.nvim.nvim_helpers import BINARIES, run_nvim
from tests.mcp_helpers import write_corpus

pytestmark = pytest.mark.skipif(not BINARIES, reason="nvim is not installed")

BODY = r"""
local out = %s
vim.cmd("DshExport s-root " .. out)
wait()
R.checks.noted = vim.wait(10000, function() return #R.notes > 0 end, 20)
vim.cmd("DshExport s-root " .. out)
wait()
R.checks.refused = vim.wait(10000, function() return #R.notes > 1 end, 20)
R.checks.seg = dq.export_segment("a/b😀 c")
"""


def test_dsh_export(tmp_path: pathlib.Path) -> None:
    uri = f"jsonl:{tmp_path / 'ex'}"
    write_corpus(uri + "?compression=none")
    out = tmp_path / "lineage.zip"
    result = run_nvim(
        BINARIES[0],
        tmp_path / "nvim",
        BODY % json.dumps(str(out)),
        server_args=["--persistence", uri],
        init={"index": ":memory:", "search": {"openAt": "never"}},
    )
    assert result["checks"]["noted"] and result["checks"]["refused"]
    assert result["notes"][0]["msg"] == f"dsh-query: exported 5 entries to {out}"
    assert "already exists" in result["notes"][1]["msg"]
    assert "SESSION_QUERY_EXPORT_FAILED" in result["notes"][1]["msg"]
    assert result["checks"]["seg"] == "a_b___c"
    with zipfile.ZipFile(out) as z:
        assert z.namelist()[0] == "session.jsonl" and len(z.namelist()) == 5
