"""``dsh-query show ID [--context] [--at SEQ]``: the session view's transcript (views.md §3) in the
terminal. Messages as a conversation with their Markdown rendered, each event's class as colour
AND the word, long tool output folded, and a divider where a replacement shadowed earlier events
("8 events, #2–#26, replaced by #29"). ``--context`` shows only what the model sees now (the
current surface, readSurface), ``--at SEQ`` the surface through SEQ (readSurface throughSeq).

The page is drawn by rich at the terminal's width (80 columns when piped without $COLUMNS) and
goes through $PAGER on a terminal, as the other long outputs do (lines.py). Session content is
data: it is given to rich as Text or Markdown, never as markup.
"""

from __future__ import annotations

import argparse
import io
from dataclasses import dataclass
from typing import Any

from ..client import Client
from . import style
from .transcript import (
    Block,
    Divider,
    Folded,
    Json,
    Message,
    Row,
    blocks,
    events_word,
    folded_summary,
    head,
    log_rows,
    replacement_title,
    size_change,
    surface_rows,
    trim_lines,
)

DEFAULT_WIDTH = 80  # piped output without $COLUMNS
FOLD_LINES = 6  # lines of tool output shown before the rest is folded
THINKING_LINES = 2

# The session view's colours (vscode-extension/src/view/style.css): the word is always printed too.
CLASS_STYLE = {"current": "green", "shadowed": "red", "log-only": "bright_black"}
ROLE_STYLE = {"user": "bold blue", "assistant": "bold magenta", "tool result": "bold yellow"}


@dataclass(frozen=True, slots=True)
class Page:
    """Everything one ``show`` prints, read from one server."""

    session_id: str
    title: str | None
    timeline: Json
    rows: list[Row]
    mode: str  # "log" | "context" | "at"
    through: int | None  # the surface's last seq in the surface modes
    surface: list[Json]  # the surface shown (surface modes), else []


def read_page(client: Client, session_id: str, context: bool, at: int | None) -> Page:
    """The timeline, each event's class, the title and the whole log in one request
    (readSessionView, one read of the log); the surface modes read the surface beside it."""
    params: dict[str, Any] = {"sessionId": session_id}
    whole = not context and at is None
    view = client.request("sessionQuery/readSessionView", {**params, "log": whole})
    timeline = view["timeline"]
    classes = {r["seq"]: r["surface"] for r in view["events"]}
    # A title that cannot be read (a malformed title event) is no title here.
    title = view["title"].get("value", {}).get("title", {}).get("title")
    if whole:
        rows = log_rows(view["log"], classes, timeline["replacements"])
        return Page(session_id, title, timeline, rows, "log", None, [])
    if at is not None:
        params["throughSeq"] = at
    surface = client.request("sessionQuery/readSurface", params)
    through = surface["capturedThroughSeq"]
    replacements = [
        r for r in timeline["replacements"] if through is not None and r["seq"] <= through
    ]
    rows = surface_rows(surface["events"], classes, replacements)
    return Page(
        session_id,
        title,
        timeline,
        rows,
        "at" if at is not None else "context",
        through,
        surface["events"],
    )


# -- drawing ---------------------------------------------------------------------------------


def _time(ms: Any) -> str:
    from .render import when

    return when(ms, "%H:%M:%S")


def _agent(header: Json) -> str:
    from .render import agent_of

    return agent_of(header)


def approx_tokens(events: list[Json]) -> int:
    """≈ tokens of a surface as views.md §2 measures one: ceil(chars / 4) of the §6.4 text."""
    from ..model.event import Event
    from ..model.text import extract_text

    chars = sum(len(extract_text(Event.from_value(e))) for e in events)
    return -(-chars // 4)


def _header(page: Page) -> list[Any]:
    from rich.text import Text

    timeline = page.timeline
    header = timeline["session"]
    captured = timeline["capturedThroughSeq"]
    count = 0 if captured is None else captured + 1
    compactions = sum(1 for r in timeline["replacements"] if r["kind"] == "compaction")
    title = Text("Session ", style="bold")
    title.append(page.session_id, style="bold cyan")
    if page.title:
        title.append(" · ")
        title.append(page.title, style="bold")
    facts = [_agent(header), f"created {_time_full(header.get('createdAt'))}"]
    if isinstance(header.get("cwd"), str):
        facts.append(header["cwd"])
    steps = len(timeline["steps"])
    counts = [
        events_word(count),
        f"{steps:,} model response" + ("" if steps == 1 else "s"),
        f"{compactions:,} compaction" + ("" if compactions == 1 else "s"),
    ]
    lines: list[Any] = [title, Text(" · ".join(facts), style="dim"), Text(" · ".join(counts))]
    if page.mode == "log":
        mode = Text("The whole log in seq order; each event's class is its colour and its word: ")
        _words(mode)
    elif page.mode == "context":
        mode = Text(
            f"What the model sees now: {events_word(len(page.surface))} on the current surface, "
            "in the order the model gets them."
        )
    else:
        mode = Text(
            f"The surface through #{page.through}: {events_word(len(page.surface))}, "
            f"≈{approx_tokens(page.surface):,} tokens (estimate), in the order the model got them; "
            "each event's class is the one it has now."
        )
    lines.append(mode)
    return lines


def _words(text: Any) -> None:
    for i, word in enumerate(("current", "shadowed", "log-only")):
        text.append(", " if i else "")
        text.append(word, style=CLASS_STYLE[word])
    text.append(".")


def _time_full(ms: Any) -> str:
    from .render import when

    return when(ms, "%Y-%m-%d %H:%M UTC")


def _class_word(surface: str | None) -> Any:
    from rich.text import Text

    word = surface or "unknown"
    return Text(word, style=CLASS_STYLE.get(word, ""))


def _message(row: Message, page: Page, step_of: dict[int, int], width: int) -> list[Any]:
    from rich.markdown import Markdown
    from rich.padding import Padding
    from rich.text import Text

    event = row.event
    seq = event["seq"]
    said = head(event)
    line = Text()
    line.append("▌", style=CLASS_STYLE.get(row.surface or "", ""))
    line.append(" ")
    line.append(said.who, style=ROLE_STYLE.get(said.who, "bold"))
    line.append(f" #{seq}")
    if said.notes:
        line.append(f" ({', '.join(said.notes)})", style="italic")
    line.append(" · ")
    line.append_text(_class_word(row.surface))
    extras = [_time(event.get("time"))]
    if seq in step_of:
        extras.append(f"step {step_of[seq] + 1}")
    if said.model:
        extras.append(said.model)
    line.append(" · " + " · ".join(e for e in extras if e), style="dim")
    out: list[Any] = [line]
    for block in blocks(event):
        if block.kind == "text" and block.text.strip():
            out.append(Padding(Markdown(block.text), (0, 0, 0, 2)))
        else:
            out.extend(_block_lines(block, page.session_id, seq, width))
    return out


def _block_lines(block: Block, session_id: str, seq: int, width: int) -> list[Any]:
    from rich.text import Text

    def one(text: str, style: str = "") -> Any:
        return Text("  " + text, style=style)

    if block.kind == "reasoning":
        shown = block.text.strip().splitlines()
        more = f" (+{len(shown) - THINKING_LINES} lines)" if len(shown) > THINKING_LINES else ""
        return [one("thinking: " + " ".join(shown[:THINKING_LINES]) + more, "dim italic")]
    if block.kind == "call":
        return [one(f"→ {block.name} {' '.join(block.text.split())}", "yellow")]
    if block.kind == "image":
        return [one("[image]", "dim")]
    if block.kind != "result":
        return []
    lines = block.text.rstrip("\n").splitlines() or ["(no output)"]
    out = [one("✗ error", "bold red")] if block.error else []
    out += [one(line) for line in lines[:FOLD_LINES]]
    if len(lines) > FOLD_LINES:
        hidden = len(lines) - FOLD_LINES
        out.append(
            one(
                f"… {hidden:,} more line{'s' if hidden != 1 else ''} folded "
                f"(dsh-query read {session_id} {seq})",
                "dim",
            )
        )
    return out


def _divider(row: Divider) -> list[Any]:
    from rich.rule import Rule
    from rich.text import Text

    rep = row.replacement
    style = "red" if rep["kind"] == "compaction" else "yellow"
    size = Text(size_change(rep), style="dim", justify="center")
    return [Rule(Text(replacement_title(rep), style=f"bold {style}"), style=style), size]


def _folded(row: Folded) -> Any:
    from rich.text import Text

    line = Text("  ▸ ")
    line.append("log-only", style=CLASS_STYLE["log-only"])
    line.append(" · " + folded_summary(row), style="bright_black")
    return line


def render(page: Page, width: int, colour: bool) -> str:
    """The page as text of at most ``width`` columns, with ANSI colours when ``colour``."""
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
        legacy_windows=False,
    )
    for line in _header(page):
        out.print(line)
    step_of = {s["seq"]: i for i, s in enumerate(page.timeline["steps"])}
    for row in page.rows:
        if isinstance(row, Divider):
            out.print()
            for part in _divider(row):
                out.print(part)
        elif isinstance(row, Folded):
            out.print(_folded(row), no_wrap=True, overflow="ellipsis")
        else:
            out.print()
            for part in _message(row, page, step_of, width):
                # one-line parts (heads, calls, tool output) are cut, Markdown wraps
                cut = isinstance(part, Text)
                out.print(part, no_wrap=cut, overflow="ellipsis" if cut else None)
    if not page.rows:
        out.print("(nothing on this surface)" if page.mode != "log" else "(no events)")
    return trim_lines(buffer.getvalue())


# -- the command -----------------------------------------------------------------------------


def width_and_colour() -> tuple[int, bool]:
    """The terminal's width and whether to colour (``--color`` and NO_COLOR, style.py)."""
    from .lines import terminal_width

    return max(40, terminal_width() or DEFAULT_WIDTH), style.colours()


def cmd_show(args: argparse.Namespace) -> None:
    from .lines import page_text  # rich: loaded by the command, not by every command's parser
    from .opening import open_client
    from .render import listing, print_json

    with open_client(args) as client:
        session_id = listing(client).resolve(args.session_id)
        page = read_page(client, session_id, args.context, args.at)
    if args.json:
        return print_json(
            {
                "session": page.timeline["session"],
                "view": page.mode,
                "throughSeq": page.through,
                "rows": [_row_json(r) for r in page.rows],
            }
        )
    width, colour = width_and_colour()
    page_text(render(page, width, colour))


def _row_json(row: Row) -> Json:
    if isinstance(row, Divider):
        return {"divider": row.replacement}
    if isinstance(row, Folded):
        return {"folded": row.seqs, "types": row.types, "surface": "log-only"}
    return {"event": row.event, "surface": row.surface}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    show = sub.add_parser(
        "show",
        parents=[common],
        help="a session's transcript: messages, each event's class, compactions "
        "(through $PAGER on a terminal)",
    )
    style.add_option(show)
    show.add_argument(
        "session_id", help="a session id, its short form as listed, or a unique prefix"
    )
    which = show.add_mutually_exclusive_group()
    which.add_argument(
        "--context",
        action="store_true",
        help="only what the model sees now (the current surface)",
    )
    which.add_argument(
        "--at",
        type=int,
        metavar="SEQ",
        help="the surface through event SEQ (what the model saw after it)",
    )
    show.set_defaults(func=cmd_show)
