"""``dsh-query export ID --html [-o FILE]`` (views.md §4): one self-contained HTML page of a
session, the page a user attaches to a bug report.

The page is the VS Code session view's own bundle (``assets/session_view.js``, built from
vscode-extension/src/view/ by ``npm run build`` and committed, so no node is needed here) inlined
with the session's data embedded as JSON: the answers the page would ask a server for
(readTimeline, listEvents, every event, the lineage). A strict Content-Security-Policy allows the
one inline script and nothing from the network.
"""

from __future__ import annotations

import json
import secrets
from importlib import resources
from typing import Any

from ..client import Client, RpcError

WINDOW_MAX = 50  # the page reads its embedded log in windows this wide, as from a server


def bundle() -> str:
    """The session page's script, as shipped in the package."""
    return (resources.files("dsh_query_server") / "assets" / "session_view.js").read_text("utf-8")


def page_data(client: Client, session_id: str) -> dict[str, Any]:
    """Everything the page shows, read from one server: readTimeline, listEvents and every event
    from one readSessionView (one read of the log), then the lineage."""
    params = {"sessionId": session_id}
    view = client.request("sessionQuery/readSessionView", {**params, "log": True})
    timeline, records, events = view["timeline"], view["events"], view["log"]
    data: dict[str, Any] = {
        "config": {"sessionId": session_id, "windowMax": WINDOW_MAX, "actions": []},
        "session": timeline["session"],
        "timeline": timeline,
        "records": records,
        "events": events,
    }
    try:
        data["lineage"] = client.request("sessionQuery/traceSession", params)
    except RpcError:
        pass  # an invalid lineage elsewhere in the corpus: the page simply lists no sub-agents
    return data


def _script_text(text: str) -> str:
    """Text that cannot end the <script> element it is inlined in."""
    return text.replace("</", "<\\/")


def render(data: dict[str, Any]) -> str:
    """The HTML page: the bundle and the data inlined, nothing loaded from anywhere."""
    nonce = secrets.token_urlsafe(18)
    # JSON may hold "<" anywhere: \u003c is the same string to JSON.parse and never ends the tag.
    embedded = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    session_id = str(data["config"]["sessionId"])
    title = (
        session_id.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
    )
    csp = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="dsh-query export --html">\n'
        f"<title>Session {title}</title>\n</head>\n<body>\n"
        '<div id="app"></div>\n'
        f'<script type="application/json" id="dsh-data">{embedded}</script>\n'
        f'<script nonce="{nonce}">{_script_text(bundle())}</script>\n'
        "</body>\n</html>\n"
    )
