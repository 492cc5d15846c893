"""``dsh-query timeline ID [--json]``: the context chart of the session view (views.md §3) in the
terminal, drawn from ``readTimeline`` alone.

x is the model's responses (steps), y the size of what it was sent: the context the provider
recorded (``recorded.context``, bars of █) where the log has it, else the estimate (``≈ tokens``,
bars of ▒, labelled as an estimate). The context window is a dotted line when known. Each
compaction is a numbered ▲ under the first step after it, explained below the chart with its
shadowed count. Glyphs and words carry every meaning; colour only repeats them. ``--json``
prints readTimeline's answer.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from . import style
from .transcript import Json, events_word, shadowed_text
from .transcript import trim_lines as _trim

HEIGHT = 10  # rows of bars
MAX_BAR = 6  # columns per step when there are few steps
EIGHTHS = " ▁▂▃▄▅▆▇█"
RECORDED, ESTIMATE, WINDOW, MARK = "█", "▒", "┄", "▲"
STYLE = {RECORDED: "cyan", ESTIMATE: "yellow", WINDOW: "bright_black", MARK: "bold red"}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the chart: the largest value of the steps it covers, and whether that value
    was recorded or estimated; a gap between two wide bars covers no step."""

    value: int
    recorded: bool
    first: int  # index of the first step it covers
    last: int
    gap: bool = False


def step_value(step: Json) -> tuple[int, bool]:
    """(tokens, recorded?): the recorded context where the step has one, else ≈ tokens."""
    recorded = step.get("recorded")
    context = recorded.get("context") if isinstance(recorded, dict) else None
    if isinstance(context, int):
        return context, True
    return step["surface"]["approxTokens"], False


def columns(steps: list[Json], width: int) -> list[Column]:
    """Steps spread over at most ``width`` columns: a few steps get up to MAX_BAR columns each, many
    steps share a column (its value the largest of them)."""
    n = len(steps)
    if n == 0:
        return []
    if n <= width:
        each = max(1, min(MAX_BAR, width // n))
        out: list[Column] = []
        for i, step in enumerate(steps):
            value, recorded = step_value(step)
            bar = Column(value, recorded, i, i)
            # wide bars keep a gap on their right, so that neighbours read as two steps
            out += [bar] * (each - 1) + [Column(0, False, i, i, True) if each > 2 else bar]
        return out
    out = []
    for c in range(width):
        first, last = c * n // width, max(c * n // width, (c + 1) * n // width - 1)
        value, recorded = max(step_value(s) for s in steps[first : last + 1])
        out.append(Column(value, recorded, first, last))
    return out


def _cell(column: Column, row: int, top: int) -> str:
    """The glyph of ``column`` in ``row`` (0 = bottom) of a chart whose top is ``top`` tokens."""
    if column.gap:
        return " "
    eighths = round(column.value / top * HEIGHT * 8) if top else 0
    if column.value > 0:
        eighths = max(eighths, 4 if not column.recorded else 1)  # never invisible
    filled = eighths - row * 8
    if filled <= 0:
        return " "
    if not column.recorded:
        return ESTIMATE if filled >= 4 else " "
    return EIGHTHS[min(8, filled)]


def marks(
    steps: list[Json], replacements: list[Json], cols: list[Column]
) -> list[tuple[int, Json]]:
    """(column, compaction) for each compaction: under the first column of the first step after
    it (the drop), or the last column when no step follows."""
    out = []
    for rep in (r for r in replacements if r["kind"] == "compaction"):
        after = next((i for i, s in enumerate(steps) if s["seq"] > rep["seq"]), None)
        if not cols:
            continue
        if after is None:
            out.append((len(cols) - 1, rep))
        else:
            out.append((next(c for c, col in enumerate(cols) if col.last >= after), rep))
    return out


def _label(value: int) -> str:
    return f"{value:,}"


def chart(timeline: Json, width: int) -> list[Any]:
    """The chart and its legend as rich Text lines, each at most ``width`` cells."""
    from rich.text import Text

    steps = timeline["steps"]
    window = timeline.get("contextWindow")
    values = [step_value(s)[0] for s in steps]
    top = max([*values, window if isinstance(window, int) else 0, 1])
    gutter = len(_label(top)) + 2
    cols = columns(steps, max(10, width - gutter - 1))
    window_row = (
        min(HEIGHT - 1, max(0, round(window / top * HEIGHT) - 1))
        if isinstance(window, int)
        else None
    )
    lines: list[Any] = []
    for row in range(HEIGHT - 1, -1, -1):
        label = (
            _label(top) if row == HEIGHT - 1 else _label(top // 2) if row == HEIGHT // 2 - 1 else ""
        )
        line = Text(label.rjust(gutter - 2) + " ┤", style="dim")
        for col in cols:
            glyph = _cell(col, row, top)
            if glyph == " " and row == window_row:
                glyph = WINDOW
            recorded_bar = glyph.strip() and glyph in EIGHTHS
            line.append(glyph, style=STYLE.get(glyph, STYLE[RECORDED] if recorded_bar else ""))
        lines.append(line)
    axis = Text("0".rjust(gutter - 2) + " └" + "─" * len(cols), style="dim")
    lines.append(axis)
    placed = marks(steps, timeline["replacements"], cols)
    under = [" "] * len(cols)
    for number, (c, _) in enumerate(placed, 1):
        under[c] = MARK if number > 9 else str(number)
    if placed:
        mark_line = Text(" " * gutter)
        for glyph in under:
            mark_line.append(glyph, style=STYLE[MARK] if glyph != " " else "")
        lines.append(mark_line)
    span = f"step 1 … step {len(steps):,}" if len(steps) > 1 else "step 1"
    lines.append(Text(" " * gutter + span.center(len(cols)).rstrip(), style="dim"))
    lines += legend(timeline, steps, window, placed)
    return lines


def legend(
    timeline: Json, steps: list[Json], window: Any, placed: list[tuple[int, Json]]
) -> list[Any]:
    from rich.text import Text

    has_recorded = any(step_value(s)[1] for s in steps)
    has_estimate = any(not step_value(s)[1] for s in steps)
    key = Text("")
    if has_recorded:
        key.append(RECORDED, style=STYLE[RECORDED])
        key.append(" recorded context (tokens)   ")
    if has_estimate:
        key.append(ESTIMATE, style=STYLE[ESTIMATE])
        key.append(" ≈ tokens (estimate: no usage recorded)   ")
    if isinstance(window, int):
        key.append(WINDOW * 2, style=STYLE[WINDOW])
        key.append(f" context window {window:,}")
    out: list[Any] = [key] if key.plain else []
    for number, (_, rep) in enumerate(placed, 1):
        line = Text(f"{number} {MARK}", style=STYLE[MARK])
        line.append(f" compaction: {shadowed_text(rep)}")
        out.append(line)
        out.append(
            Text(
                f"    surface ≈{rep['before']['approxTokens']:,} → "
                f"≈{rep['after']['approxTokens']:,} tokens (estimate)",
                style="dim",
            )
        )
    rewrites = sum(1 for r in timeline["replacements"] if r["kind"] != "compaction")
    if rewrites:
        out.append(Text(f"{rewrites:,} tool result rewrite(s), not drawn (see dsh-query show)"))
    peak = timeline.get("peak")
    if isinstance(peak, dict):
        at = next((i for i, s in enumerate(steps) if s["seq"] == peak["seq"]), 0)
        line = Text(
            f"peak: step {at + 1:,} (#{peak['seq']}), ≈{peak['approxTokens']:,} tokens (estimate)"
        )
        if isinstance(peak.get("recordedContext"), int):
            line.append(f", recorded context {peak['recordedContext']:,}")
        out.append(line)
    return out


def text(timeline: Json, width: int, colour: bool) -> str:
    import io

    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    out = Console(
        file=buffer,
        width=width,
        force_terminal=colour,
        color_system="standard" if colour else None,
        no_color=not colour,
        highlight=False,
        emoji=False,
    )
    session = timeline["session"]
    captured = timeline["capturedThroughSeq"]
    count = 0 if captured is None else captured + 1
    steps = timeline["steps"]
    title = Text("Context of ", style="bold")
    title.append(str(session.get("id")), style="bold cyan")
    title.append(
        f" · {events_word(count)} · {len(steps):,} model response"
        + ("" if len(steps) == 1 else "s")
    )
    out.print(title)
    if not steps:
        out.print("No model response in this session: nothing to chart.")
        return buffer.getvalue()
    for line in chart(timeline, width):
        out.print(line, no_wrap=True, overflow="ellipsis")
    return _trim(buffer.getvalue())


def cmd_timeline(args: argparse.Namespace) -> None:
    from .lines import page_text
    from .opening import open_client
    from .render import listing, print_json
    from .show import width_and_colour

    with open_client(args) as client:
        session_id = listing(client).resolve(args.session_id)
        timeline = client.request("sessionQuery/readTimeline", {"sessionId": session_id})
    if args.json:
        return print_json(timeline)
    width, colour = width_and_colour()
    page_text(text(timeline, width, colour))


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    timeline = sub.add_parser(
        "timeline",
        parents=[common],
        help="the context chart of a session: its size at every model response, and its "
        "compactions",
    )
    style.add_option(timeline)
    timeline.add_argument(
        "session_id", help="a session id, its short form as listed, or a unique prefix"
    )
    timeline.set_defaults(func=cmd_timeline)
