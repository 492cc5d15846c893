"""The ``dsh-query`` command line: ``serve``, ``hub``, ``demo``, and client commands that ask the
hub of their configuration (or, with ``--no-hub``, a server of their own over stdio). Output is a
table or tree by default and JSON with ``--json``.

Each module that owns subcommands has ``register(sub, common)``, which adds its parsers to the
``sub`` subparsers (``common`` holds ``--persistence`` and ``--json``) and sets ``func`` on each;
``MODULES`` names each module with the subcommands it registers (a test holds them to what it
registers). A command line that names its subcommand imports and registers only that module, and
each module imports its heavy dependencies (the server, rich, the search machinery) inside its
commands: ``dsh-query sessions --json`` against a hub loads little more than the socket client
(a test lists what it must not load).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from .connect import fail

# The modules that own subcommands, in help order, each with the subcommands it registers.
MODULES: dict[str, tuple[str, ...]] = {
    "serve": ("serve",),
    "hub": ("hub",),
    "demo": ("demo",),
    "commands": ("sessions", "events", "read", "surface", "trace", "mount", "search"),
    "show": ("show",),
    "timeline": ("timeline",),
    "usage": ("usage",),
    "passthrough": ("schema", "mcp", "export", "postgres", "sync"),
}
OWNER = {command: module for module, commands in MODULES.items() for command in commands}
# The top-level options that take no value; anything else before the subcommand (help, the
# version, an abbreviation) gets the whole parser.
_PLAIN = ("--no-hub",)


def subcommand(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names when only plain options come before it, else None."""
    for arg in argv:
        if arg not in _PLAIN:
            return arg if arg in OWNER else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser, or with ``command`` only those of the module that owns it
    (the same parse of any command line that names ``command``)."""
    parser = argparse.ArgumentParser(
        prog="dsh-query", description="Exact inspection of agent session histories."
    )
    parser.add_argument("--version", action="version", version=f"dsh-query {__version__}")
    # Before or after the subcommand; SUPPRESS, so the subcommand's parser does not reset it.
    no_hub = "use a private server for this command instead of the shared hub"
    parser.add_argument("--no-hub", action="store_true", default=argparse.SUPPRESS, help=no_hub)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--no-hub", action="store_true", default=argparse.SUPPRESS, help=no_hub)
    common.add_argument(
        "--persistence",
        metavar="URI",
        action="append",
        help="backend to mount: auto, jsonl:<root>, sqlite:<file>, claude:<home>, "
        "codex:<home>, gemini:<home>, opencode:<dir>, copilot:<home>, qwen:<home>, or none; repeat "
        "it to mount several as one (default: auto, the embedded sqlite store plus the dsh, Claude "
        "Code, Codex, Gemini CLI, OpenCode, Copilot CLI and Qwen Code homes "
        "that exist)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of tables")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in MODULES if command is None else (OWNER[command],):
        importlib.import_module(f".{name}", __name__).register(sub, common)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and OWNER.get(argv[0]) == "passthrough":
        from . import passthrough

        run, _ = passthrough.COMMANDS[argv[0]]
        sys.exit(run(argv[1:]) or 0)
    args = build_parser(subcommand(argv)).parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - client errors print one line, not a traceback
        fail(exc)


__all__ = ["MODULES", "build_parser", "main", "subcommand"]
