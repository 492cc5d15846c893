"""Generate the editors' copies of the shared command ids from ``server/tree/commands.py``.

    python -m dsh_query_server.devtools.gen_commands          # rewrite the generated files
    python -m dsh_query_server.devtools.gen_commands --check  # exit 1 if any has drifted

Both outputs are committed; tests/server/tree/test_tree.py runs the check.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ..server.tree.commands import SHARED

ROOT = Path(__file__).resolve().parents[2]
LUA = ROOT / "editor" / "nvim" / "lua" / "dsh_query" / "commands.lua"
TS = ROOT / "vscode-extension" / "src" / "commandIds.ts"

_SOURCE = "dsh_query_server/server/tree/commands.py"
_COMMAND = "python -m dsh_query_server.devtools.gen_commands"
_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_ID = re.compile(r"[A-Za-z][A-Za-z0-9._]*\Z")  # ASCII: one literal syntax for Lua and TS


def _entries(shared: dict[str, str]) -> list[tuple[str, str]]:
    for name, value in shared.items():
        if not _NAME.match(name) or not _ID.match(value):
            raise ValueError(f"not a plain command id: {name} = {value!r}")
    return list(shared.items())


def render_lua(shared: dict[str, str] = SHARED) -> str:
    lines = [
        f"-- Generated from {_SOURCE} by `{_COMMAND}`; do not edit.",
        "-- Command ids shared by the server, this client and the VS Code extension.",
        "return {",
        *(f"  {name} = {json.dumps(value)}," for name, value in _entries(shared)),
        "}",
    ]
    return "\n".join(lines) + "\n"


def render_ts(shared: dict[str, str] = SHARED) -> str:
    lines = [
        f"// Generated from {_SOURCE} by `{_COMMAND}`; do not edit.",
        "// Command ids shared by the server, the Neovim client and this extension.",
        "",
        *(f"export const {name} = {json.dumps(value)};" for name, value in _entries(shared)),
    ]
    return "\n".join(lines) + "\n"


def outputs() -> dict[Path, str]:
    return {LUA: render_lua(), TS: render_ts()}


def drifted() -> list[Path]:
    """The generated files whose committed text differs from what the source generates."""
    return [
        path
        for path, text in outputs().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the editors' copies of the command ids.")
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    check = parser.parse_args(argv).check
    if check:
        stale = drifted()
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run {_COMMAND}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
