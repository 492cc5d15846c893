"""Plain one-line-per-row tables cut to the terminal with ``…``, and output through ``$PAGER``.

Rows are plain text, never markup; control characters from session content are shown as U+FFFD
so a transcript cannot move the cursor or change colours.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
GAP = "  "


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    flexible: bool = False  # shrinks (cut with …) when the row is wider than the terminal
    right: bool = False


def clean(text: str) -> str:
    return _CONTROL.sub("\ufffd", text)


def cut(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    return set_cell_size(text, width - 1) + "…"


def terminal_width() -> int | None:
    """The width to cut to: the terminal's (or $COLUMNS); None when piped without $COLUMNS, so a
    pipe gets whole rows."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _widths(columns: Sequence[Column], rows: list[list[str]], total: int | None) -> list[int]:
    widths = [
        max([cell_len(c.header), *(cell_len(r[i]) for r in rows)]) for i, c in enumerate(columns)
    ]
    if total is None:
        return widths
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - total
    floors = {i: max(6, cell_len(c.header)) for i, c in enumerate(columns) if c.flexible}
    # One cell at a time from the widest flexible column, never below its floor: rows are short.
    while excess > 0:
        shrinkable = [i for i, floor in floors.items() if widths[i] > floor]
        if not shrinkable:
            break
        widths[max(shrinkable, key=lambda j: widths[j])] -= 1
        excess -= 1
    return widths


def render(columns: Sequence[Column], rows: list[list[str]], total: int | None) -> list[str]:
    rows = [[clean(v) for v in r] for r in rows]
    widths = _widths(columns, rows, total)
    out: list[str] = []
    for row in [[c.header for c in columns], *rows]:
        cells = []
        for value, width, column in zip(row, widths, columns, strict=True):
            text = cut(value, width)
            pad = " " * (width - cell_len(text))
            cells.append(pad + text if column.right else text + pad)
        line = GAP.join(cells).rstrip()
        out.append(cut(line, total) if total is not None else line)
    return out


def emit(lines: list[str], page: bool = True) -> None:
    """To $PAGER when stdout is a terminal (and ``page``), else straight out."""
    text = "\n".join(lines) + "\n"
    if page and sys.stdout.isatty() and _page(text):
        return
    sys.stdout.write(text)


def _page(text: str) -> bool:
    """$PAGER (default ``less``, with LESS=FRX so a short list just prints); False when it could
    not run, so the caller prints instead."""
    import subprocess

    command = os.environ.get("PAGER") or "less"
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX")}
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:
        pass  # the reader quit early (q in less)
    return proc.wait() != 127  # 127: the shell found no such pager


__all__ = ["Column", "clean", "cut", "emit", "render", "terminal_width"]
