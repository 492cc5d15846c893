"""Colour on the command line: ``--color auto|always|never`` and ``NO_COLOR``.

``auto`` (the default) colours only a terminal and only when ``NO_COLOR`` is unset or empty
(no-color.org); ``always`` and ``never`` override both. Colour never carries meaning alone: every
styled thing is also a word or a mark (a surface class is printed as its name, a search match is
also wrapped in « »).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

CHOICES = ("auto", "always", "never")

# The three surface classes (semantics.md §1.8), each also printed as its word.
SURFACE = {"current": "green", "shadowed": "yellow", "log-only": "dim"}
HEADER = "bold"
MATCH = "bold reverse"
ID = "cyan"
DIM = "dim"

_mode = "auto"


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=CHOICES,
        default="auto",
        help="colour the output: auto (a terminal, unless NO_COLOR is set), always or never",
    )


def set_mode(choice: str | None) -> None:
    """The ``--color`` of this command, for every console made after it."""
    global _mode
    _mode = choice if choice in CHOICES else "auto"


def colours(stream: TextIO | None = None) -> bool:
    """Whether output to ``stream`` (stdout by default) gets colour under the current mode."""
    if _mode != "auto":
        return _mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    target = sys.stdout if stream is None else stream
    return target.isatty()


def console(stderr: bool = False, **options: Any) -> Any:
    """A rich Console for stdout (or stderr) that colours exactly when ``colours`` says so."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if colours(stream):
        return Console(stderr=stderr, force_terminal=True, color_system="standard", **options)
    return Console(stderr=stderr, color_system=None, no_color=True, **options)


def to_ansi(lines: list[Any]) -> str:
    """rich Text lines as one string: with escape sequences when stdout gets colour, plain text
    otherwise. Lines are never wrapped (they are already cut to the terminal)."""
    if not colours():
        return "".join(f"{line.plain if hasattr(line, 'plain') else line}\n" for line in lines)
    import io

    from rich.console import Console

    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, color_system="standard", width=1_000_000)
    for line in lines:
        out.print(line, soft_wrap=True, crop=False, overflow="ignore", highlight=False)
    return buffer.getvalue()


__all__ = [
    "CHOICES",
    "DIM",
    "HEADER",
    "ID",
    "MATCH",
    "SURFACE",
    "add_option",
    "colours",
    "console",
    "set_mode",
    "to_ansi",
]
