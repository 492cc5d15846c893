"""The end of ``dsh-query demo``: what the model saw in the demo's compaction session, shown the
three ways issue 24 added (views.md §3): the context chart (``dsh-query timeline``), the current
surface (``dsh-query show --context``) and the session's HTML page (``dsh-query export --html``),
written where it outlives the demo's temporary store."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from ..client import Client
from . import html_export, show, timeline


def write_page(client: Client, session_id: str) -> str:
    """The session's HTML page in a new private folder (0700, the file 0600); its path."""
    folder = tempfile.mkdtemp(prefix="dsh-query-demo-page-")
    path = os.path.join(folder, f"dsh-session-{session_id}.html")
    page = html_export.render(html_export.page_data(client, session_id))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def show_views(client: Client, session_id: str, console: Any) -> str:
    """Prints the chart and the current surface of ``session_id``, writes its page; the path."""
    width, colour = show.width_and_colour()
    console.rule(f"[bold]dsh-query timeline {session_id}")
    chart = client.request("sessionQuery/readTimeline", {"sessionId": session_id})
    sys.stdout.write(timeline.text(chart, width, colour))
    console.rule(f"[bold]dsh-query show {session_id} --context")
    sys.stdout.write(show.render(show.read_page(client, session_id, True, None), width, colour))
    path = write_page(client, session_id)
    console.rule(f"[bold]dsh-query export {session_id} --html")
    sys.stdout.write(f"the session view of {session_id} as one HTML page; open it in a browser:\n")
    sys.stdout.write(f"  {path}\n")
    sys.stdout.flush()
    return path
