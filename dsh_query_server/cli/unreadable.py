"""Warnings about unreadable sessions (semantics.md §6.5 [ours]): one line per session on
stderr, after the results, naming its file and what is wrong with it. A search result and
``sessionPersistence/status`` carry the same entries (``unreadable``, ``unreadableCount``)."""

from __future__ import annotations

from typing import Any

from ..client import Client
from . import style


def reason(entry: dict[str, Any]) -> str:
    """The entry's message without the file it ends with (the line names the file first)."""
    message, path = str(entry.get("message", "")), entry.get("path")
    suffix = f" ({path})"
    return message[: -len(suffix)] if path and message.endswith(suffix) else message


def lines(result: dict[str, Any]) -> list[str]:
    """The warning lines for a result's ``unreadable`` entries (none when it has none)."""
    entries: list[dict[str, Any]] = result.get("unreadable") or []
    count = int(result.get("unreadableCount", len(entries)))
    out = [
        f"warning: unreadable session {e.get('sessionId')}, left out: "
        f"{e.get('path') or 'no file'}: {reason(e)}"
        for e in entries
    ]
    if count > len(entries):
        out.append(f"warning: {count - len(entries)} more unreadable sessions not listed here")
    return out


def warn(result: dict[str, Any]) -> None:
    """Print ``lines(result)`` on stderr; the word "warning" goes with the colour."""
    found = lines(result)
    if not found:
        return
    from rich.text import Text

    console = style.console(stderr=True, soft_wrap=True, highlight=False)
    for line in found:
        console.print(Text(line, style="yellow"))


def warn_status(client: Client, result: dict[str, Any] | None = None) -> None:
    """``warn`` for ``result``'s entries and what the mounted store's status reports as
    unreadable besides (the transcripts a listing skipped, which no search can name)."""
    status: dict[str, Any] = client.request("sessionPersistence/status")
    if result is None:
        return warn(status)
    entries: list[dict[str, Any]] = list(result.get("unreadable") or [])
    count = int(result.get("unreadableCount", len(entries)))
    named = {(e.get("sessionId"), e.get("path")) for e in entries}
    extra = [
        e
        for e in status.get("unreadable") or []
        if (e.get("sessionId"), e.get("path")) not in named
    ]
    warn({"unreadable": entries + extra, "unreadableCount": count + len(extra)})
