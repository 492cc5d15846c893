"""The ``dsh-query`` command line: ``serve``, ``hub``, ``demo``, and client commands that ask the
hub of their configuration (or, with ``--no-hub``, a server of their own over stdio). Output is a
table or tree by default and JSON with ``--json``.

Each module that owns subcommands has ``register(sub, common)``, which adds its parsers to the
``sub`` subparsers (``common`` holds ``--persistence`` and ``--json``) and sets ``func`` on each;
a new subcommand is one more entry in ``SUBCOMMANDS``. Modules import heavy dependencies (the
server, rich) inside their commands, so ``dsh-query --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .. import __version__
from . import commands, demo, hub, passthrough, serve, show, timeline, usage
from .connect import fail

# In help order.
SUBCOMMANDS: list[Callable[[Any, argparse.ArgumentParser], None]] = [
    serve.register,
    hub.register,
    demo.register,
    commands.register,
    show.register,
    timeline.register,
    usage.register,
    passthrough.register,
]


def build_parser() -> argparse.ArgumentParser:
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
    for register in SUBCOMMANDS:
        register(sub, common)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in passthrough.COMMANDS:
        run, _ = passthrough.COMMANDS[argv[0]]
        sys.exit(run(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - client errors print one line, not a traceback
        fail(exc)


__all__ = ["SUBCOMMANDS", "build_parser", "main"]
