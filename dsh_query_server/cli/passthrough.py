"""Subcommands that parse their own arguments: ``schema``, ``mcp``, ``export``, ``postgres`` and
``sync``.

``main`` hands everything after the name to the command's own ``main(argv)``, so each keeps one
parser (``python -m dsh_query_server.mcp`` and ``dsh-query mcp`` accept the same flags); here they
are only listed, for ``dsh-query --help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _schema(argv: list[str]) -> int | None:
    from ..schema import main

    return main(argv)


def _mcp(argv: list[str]) -> int | None:
    from ..mcp.server import main

    if "-h" in argv or "--help" in argv:
        # --demo is this command line's, not the MCP server's: its help lists it too.
        from ..mcp.config import parser

        mcp = parser()
        mcp.add_argument(
            "--demo",
            action="store_true",
            help="serve the demo corpus (as serve --demo), with the demo's main project as "
            "the workspace unless --workspace is given",
        )
        mcp.print_help()
        return 0
    if "--demo" not in argv:
        return main(argv)
    # The demo corpus, as `serve --demo` preloads it; the workspace is the demo's main project
    # unless given (a client's MCP roots still replace it).
    from .demo import DEMO_WORKSPACE, serve_demo

    argv = [a for a in argv if a != "--demo"] + ["--no-hub"]  # the demo corpus is private
    options: dict[str, Any] = {}
    preload = serve_demo(options)
    defaults = {
        "--persistence": options["persistence"],
        "--index": options["index"],
        "--checkpoint": options["checkpoint"]["mode"],
        "--workspace": DEMO_WORKSPACE,
    }
    given = {a.split("=", 1)[0] for a in argv}
    extra = [x for flag, value in defaults.items() if flag not in given for x in (flag, value)]
    return main(extra + argv, preload)


def _export(argv: list[str]) -> int | None:
    from .export import main

    return main(argv)


def _sync(argv: list[str]) -> int | None:
    from .sync import main

    return main(argv)


def _postgres(argv: list[str]) -> int | None:
    from .postgres import main

    return main(argv)


# name -> (run, one-line help)
COMMANDS: dict[str, tuple[Callable[[list[str]], int | None], str]] = {
    "schema": (_schema, "print the JSON Schema of every method's params, result and error data"),
    "mcp": (
        _mcp,
        "serve the history tools to an agent over MCP (stdio); --demo on the demo corpus;"
        " see --help",
    ),
    "export": (_export, "write a session (and its sub-agents) as a ZIP; see --help"),
    "postgres": (_postgres, "administer a postgres: store: init creates it and grants roles"),
    "sync": (_sync, "copy sessions from any sources into a shared postgres: store; see --help"),
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    del common  # these commands parse their own flags
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
