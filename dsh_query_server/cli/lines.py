"""Plain one-line-per-row tables fitted to the terminal, and output through ``$PAGER``.

A row that is wider than the terminal is fitted in three steps: flexible columns shrink (widest
first) to their comfortable width (``keep``); then whole columns are dropped, lowest ``drop``
rank first, and the rest widened again; only when nothing more can be dropped do flexible columns
shrink to ``FLOOR`` and the line is cut. Cut values end in ``…``.

Cells are plain strings or rich ``Text`` (a style, never markup); control characters from session
content are shown as U+FFFD so a transcript cannot move the cursor or change colours.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from . import style

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
GAP = "  "
FLOOR = 6

Cell = str | Text


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    flexible: bool = False  # shrinks (cut with …) when the row is wider than the terminal
    right: bool = False
    keep: int = FLOOR  # a flexible column shrinks to this before any column is dropped
    drop: int | None = None  # dropped when the terminal is too narrow, lowest rank first
    style: str | None = None  # the style of every value (values that are Text keep theirs)
    focus: bool = False  # a cut value keeps its first styled part (a search match) in view


def clean(text: str) -> str:
    return _CONTROL.sub("\ufffd", text)


def cut(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    if width <= 0:
        return ""
    return set_cell_size(text, width - 1) + "…"


def _cut_text(text: Text, width: int) -> Text:
    if text.cell_len <= width:
        return text
    out = text.copy()
    out.truncate(max(width, 0), overflow="ellipsis")
    return out


def _cut_around(text: Text, width: int) -> Text:
    """Cut to ``width`` keeping the first styled span in view: when it would fall past the cut,
    the value starts shortly before it, after a leading ``…``."""
    if text.cell_len <= width or not text.spans:
        return _cut_text(text, width)
    span = min(text.spans, key=lambda s: s.start)
    if cell_len(text.plain[: span.end]) < width:
        return _cut_text(text, width)
    lead = max(1, min(width // 4, width - (span.end - span.start) - 2))
    begin = max(0, span.start - lead)
    return _cut_text(Text("…") + text[begin:], width)


def terminal_width() -> int | None:
    """The width to cut to: the terminal's (or $COLUMNS); None when piped without $COLUMNS, so a
    pipe gets whole rows."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _natural(columns: Sequence[Column], rows: list[list[Text]]) -> list[int]:
    return [
        max([cell_len(c.header), *(r[i].cell_len for r in rows)]) for i, c in enumerate(columns)
    ]


def _shrink(widths: list[int], floors: dict[int, int], excess: int) -> int:
    """Take ``excess`` cells from the widest columns above their floor; what is left over."""
    while excess > 0:
        shrinkable = [i for i, floor in floors.items() if widths[i] > floor]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda j: widths[j])
        others = [widths[j] for j in shrinkable if j != widest]
        # Down to the next widest (or the floor) in one step: rows are short, tables are long.
        step = min(excess, widths[widest] - max([floors[widest], *others]) or 1)
        widths[widest] -= step
        excess -= step
    return excess


def fit(columns: Sequence[Column], rows: list[list[Text]], total: int | None) -> list[int | None]:
    """Each column's width, or None for a dropped column."""
    natural = _natural(columns, rows)
    if total is None:
        return list(natural)
    kept = list(range(len(columns)))
    droppable = sorted(
        (i for i, c in enumerate(columns) if c.drop is not None),
        key=lambda i: columns[i].drop or 0,
    )
    while True:
        widths = {i: natural[i] for i in kept}
        excess = sum(widths.values()) + len(GAP) * (len(kept) - 1) - total
        comfortable = {
            i: min(natural[i], max(columns[i].keep, cell_len(columns[i].header)))
            for i in kept
            if columns[i].flexible
        }
        as_list = [widths.get(i, 0) for i in range(len(columns))]
        excess = _shrink(as_list, comfortable, excess)
        if excess > 0 and droppable:
            kept.remove(droppable.pop(0))
            continue
        if excess > 0:
            floors = {i: max(FLOOR, cell_len(columns[i].header)) for i in comfortable}
            _shrink(as_list, floors, excess)
        return [as_list[i] if i in kept else None for i in range(len(columns))]


def _text(value: Cell, column: Column) -> Text:
    if isinstance(value, Text):
        out = value.copy()
        out.plain = clean(out.plain)  # same length: styles stay where they were
        return out
    return Text(clean(value), style=column.style or "")


def render(
    columns: Sequence[Column], rows: Sequence[Sequence[Cell]], total: int | None
) -> list[Text]:
    cells = [[_text(v, c) for v, c in zip(r, columns, strict=True)] for r in rows]
    widths = fit(columns, cells, total)
    header = [Text(c.header, style=style.HEADER) for c in columns]
    out: list[Text] = []
    for row in [header, *cells]:
        parts: list[Text] = []
        for value, width, column in zip(row, widths, columns, strict=True):
            if width is None:
                continue
            text = _cut_around(value, width) if column.focus else _cut_text(value, width)
            pad = " " * (width - text.cell_len)
            parts.append(Text(pad) + text if column.right else text + Text(pad))
        line = Text(GAP).join(parts)
        line.rstrip()
        out.append(_cut_text(line, total) if total is not None else line)
    return out


def emit(lines: Sequence[Cell], page: bool = True) -> None:
    """To $PAGER when stdout is a terminal (and ``page``), else straight out; coloured as
    ``style.colours`` says."""
    text = style.to_ansi(list(lines))
    if page:
        page_text(text)
    else:
        sys.stdout.write(text)


def page_text(text: str) -> None:
    """Text (ANSI colour included) to $PAGER when stdout is a terminal, else straight out."""
    if sys.stdout.isatty() and _page(text):
        return
    sys.stdout.write(text)


def _page(text: str) -> bool:
    """$PAGER (default ``less``, with LESS=FRX so a short list just prints and colours pass);
    False when it could not run, so the caller prints instead."""
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


__all__ = ["Cell", "Column", "clean", "cut", "emit", "fit", "page_text", "render", "terminal_width"]
