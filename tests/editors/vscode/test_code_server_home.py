"""code-server writes a default config (with a generated password) and a log folder into its
home on any start, `--version` included (issue 25 finding 6). The Makefile runs it
(`vscode-code-server-version`, part of installing it) with a home of its own inside the E2E
cache; the E2E harness gives it one inside the test's temporary directory. The user's home gets
nothing from either."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.editors.vscode.vscode_e2e_helpers import require_e2e_tools
from tests.editors.vscode.vscode_helpers import (
    CODE_SERVER_VERSION,
    ROOT,
    code_server_dir,
    e2e_cache,
)


def test_make_runs_code_server_with_a_home_of_its_own(tmp_path: Path) -> None:
    require_e2e_tools()
    home = tmp_path / "home"
    home.mkdir()
    # A home with nothing in it, and no XDG folders: code-server would fall back to this home.
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), DSH_QUERY_E2E_CACHE=str(e2e_cache()))
    ran = subprocess.run(
        ["make", "-s", "--no-print-directory", "vscode-code-server-version"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # Its version (after the line saying where it wrote its config, the first time).
    assert ran.stdout.splitlines()[-1].startswith(f"{CODE_SERVER_VERSION} "), ran.stdout
    assert sorted(home.rglob("*")) == []
    config = code_server_dir() / "home" / ".config" / "code-server" / "config.yaml"
    assert config.is_file()
    # It holds a password: private to its owner (when this run or an earlier one made it).
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
