"""The commands that show one session's events: ``events`` (the log, one line per event),
``read`` (a window of whole events) and ``surface`` (the model's current context). Every event
is shown with its class (current, shadowed or log-only) as a word."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..client import Client
from . import style
from .describe import describe, one_line
from .render import plural, print_json, print_result, when

EventFilter = Callable[[dict[str, Any]], bool]


def _surface_word(surface: Any) -> Any:
    from rich.text import Text

    word = str(surface)
    return Text(word, style=style.SURFACE.get(word, ""))


def _texts(client: Client, session_id: str) -> dict[int, str]:
    """Each event's description (describe.py), by seq."""
    log = client.request("sessionQuery/readSession", {"sessionId": session_id})
    return {e["seq"]: describe(e) for e in log["events"]}


def _span(events: list[dict[str, Any]]) -> tuple[str, str]:
    """The log's time span for the heading, and the time format of its rows (the date joins
    the time when the log spans more than one day)."""
    stamp = "%Y-%m-%d %H:%M:%S"
    first, last = when(events[0]["time"], stamp), when(events[-1]["time"], stamp)
    if first == last:
        return f"{first} UTC", "%H:%M:%S"
    if first[:10] == last[:10]:
        return f"{first[:10]} {first[11:]}–{last[11:]} UTC", "%H:%M:%S"
    return f"{first[:16]}–{last[:16]} UTC", "%m-%d %H:%M"


def show_events(
    client: Client,
    session_id: str,
    as_json: bool,
    limit: int | None = None,
    page: bool = True,
    keep: EventFilter | None = None,
    kept: str = "",
    name: str | None = None,
) -> None:
    """One line per event fitted to the terminal (through $PAGER on a terminal). ``keep``
    selects events (``kept`` says how, for the heading); ``name`` is the id as shown. JSON
    carries each record plus the ``text`` the table shows, uncut."""
    from rich.text import Text

    from .lines import Column, emit, render, terminal_width

    events = client.request("sessionQuery/listEvents", {"sessionId": session_id})
    total = len(events)
    selected = [e for e in events if keep is None or keep(e)]
    shown = selected[:limit] if limit is not None else selected
    text = _texts(client, session_id) if shown else {}
    if as_json:
        return print_json(
            [{**e, "text": text[e["seq"]]} if text.get(e["seq"]) else e for e in shown]
        )
    name = name or session_id
    if not events:
        heading = f"events of {name}: none yet (the log holds only its header)"
        return emit([Text(heading, style=style.HEADER)], page)
    span, time_format = _span(events)
    count = plural(total, "event") if keep is None else f"{len(selected)} of {total} events"
    lines: list[Any] = [Text(f"events of {name}: {count}, {span}", style=style.HEADER)]
    if keep is not None:
        lines.append(Text(f"shown: {kept}", style=style.DIM))
    columns = [
        Column("seq", right=True),
        Column("type", flexible=True, keep=17),
        Column("class"),
        Column("time", drop=1),
        Column("text", flexible=True, keep=36),
    ]
    rows = [
        [
            str(e["seq"]),
            str(e["type"]),
            _surface_word(e["surface"]),
            when(e["time"], time_format),
            one_line(text.get(e["seq"], "")),
        ]
        for e in shown
    ]
    if shown:
        lines += render(columns, rows, terminal_width())
    if len(shown) < len(selected):
        more = plural(len(selected) - len(shown), "more event")
        lines.append(Text(f"… {more} (--limit N shows more)", style=style.DIM))
    emit(lines, page)


def show_read(
    client: Client, session_id: str, seq: int, before: int, after: int, as_json: bool
) -> None:
    """Whole events around ``seq``, each headed by its seq, type and class; JSON is the window
    with each event's ``surface`` added."""
    window = client.request(
        "sessionQuery/readEvent",
        {"sessionId": session_id, "seq": seq, "before": before, "after": after},
    )
    records = client.request("sessionQuery/listEvents", {"sessionId": session_id})
    surface = {r["seq"]: r["surface"] for r in records}
    if as_json:
        events = [
            {**e, "surface": surface[e["seq"]]} if e["seq"] in surface else e
            for e in window["events"]
        ]
        return print_json({**window, "events": events})
    import json

    from rich.json import JSON
    from rich.text import Text

    out = style.console()
    for event in window["events"]:
        head = Text(f"#{event['seq']} {event['type']}  ", style=style.HEADER)
        head.append_text(_surface_word(surface.get(event["seq"], "unknown")))
        if event["seq"] == seq:
            head.append("  ◀ target", style="bold")
        out.rule(head, align="left")
        # Wrapped to the terminal (print_json would leave long strings to the terminal).
        out.print(JSON(json.dumps(event, ensure_ascii=False)))


def show_surface(
    client: Client, session_id: str, as_json: bool, full: bool, name: str | None = None
) -> None:
    """The current surface, one line per event (``full``: every event's whole text); ``name`` is
    the id as shown."""
    if as_json:
        return print_result(client, "sessionQuery/readSurface", {"sessionId": session_id})
    from rich.text import Text

    from .lines import Column, clean, emit, render, terminal_width

    surface = client.request("sessionQuery/readSurface", {"sessionId": session_id})
    events = surface["events"]
    through = surface["capturedThroughSeq"]
    name = name or session_id
    if through is None:
        heading = f"surface of {name}: empty (the log holds no events yet)"
    else:
        heading = (
            f"surface of {name}: {plural(len(events), 'event')} in context, as of seq {through}"
        )
    lines: list[Any] = [Text(heading, style=style.HEADER)]
    if full:
        for event in events:
            lines.append(Text(f"\n#{event['seq']} {event['type']}", style=style.HEADER))
            body = describe(event) or "(no text)"
            lines.extend(Text(clean(line)) for line in body.split("\n"))
    elif events:
        columns = [
            Column("seq", right=True),
            Column("type", flexible=True, keep=17),
            Column("text", flexible=True, keep=36),
        ]
        rows: list[list[Any]] = [
            [str(e["seq"]), str(e["type"]), one_line(describe(e))] for e in events
        ]
        lines += render(columns, rows, terminal_width())
    emit(lines)


__all__ = ["EventFilter", "show_events", "show_read", "show_surface"]
