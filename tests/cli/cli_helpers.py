"""The dsh-query command run as a user runs it: a subprocess, in a private home, at a width."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

from tests.import_helpers import isolated_env


def dsh(
    *args: str,
    home: pathlib.Path,
    columns: int | None = 120,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``dsh-query ARGS`` with every home, state and cache dir inside ``home`` and stdout a pipe
    ($COLUMNS as given; None: unset, so rows are whole)."""
    base = isolated_env(home)
    base["XDG_CACHE_HOME"] = str(home / "cache")
    base.pop("NO_COLOR", None)
    base.pop("COLUMNS", None)
    if columns is not None:
        base["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **(env or {})},
        cwd=cwd,
    )


def fits(text: str, width: int) -> bool:
    """Every line at most ``width`` cells, colour sequences aside."""
    from rich.cells import cell_len

    return all(cell_len(re.sub(r"\x1b\[[0-9;]*m", "", line)) <= width for line in text.splitlines())


def tree(root: pathlib.Path) -> list[str]:
    """Every path under ``root``, relative (what a command may have created)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


__all__ = ["dsh", "fits", "tree"]
