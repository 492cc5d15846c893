"""``dsh-query show`` reads its page with one ``readSessionView`` (one read of the log) instead of
``readTimeline``, ``listEvents``, ``readTitle`` and ``readSession``: the page, and so what it
prints, is exactly what the four requests gave (views.md §3.2), in every mode, on real Claude Code
transcripts (the importers.md §1.5 worked example, a real tool-heavy one) over a real server. The
HTML export (views.md §4) embeds what its three requests gave."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from dsh_query_server.cli import html_export, show
from dsh_query_server.cli.transcript import log_rows, surface_rows
from dsh_query_server.client import Client, RpcError, StdioClient
from tests.import_helpers import REAL, SPEC

pytestmark = [pytest.mark.wire]


def _four_requests(client: Client, sid: str, context: bool, at: int | None) -> show.Page:
    """The page as ``show`` read it before readSessionView."""
    params: dict[str, Any] = {"sessionId": sid}
    timeline = client.request("sessionQuery/readTimeline", params)
    classes = {r["seq"]: r["surface"] for r in client.request("sessionQuery/listEvents", params)}
    try:
        title = client.request("sessionQuery/readTitle", params).get("title", {}).get("title")
    except RpcError:
        title = None
    if not context and at is None:
        events = client.request("sessionQuery/readSession", params)["events"]
        rows = log_rows(events, classes, timeline["replacements"])
        return show.Page(sid, title, timeline, rows, "log", None, [])
    if at is not None:
        params["throughSeq"] = at
    surface = client.request("sessionQuery/readSurface", params)
    through = surface["capturedThroughSeq"]
    replacements = [
        r for r in timeline["replacements"] if through is not None and r["seq"] <= through
    ]
    rows = surface_rows(surface["events"], classes, replacements)
    mode = "at" if at is not None else "context"
    return show.Page(sid, title, timeline, rows, mode, through, surface["events"])


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("show-view")
    claude = shutil.copytree(SPEC / "claude", base / "claude")
    (claude / "projects" / "-real").mkdir()
    shutil.copy(
        REAL / "claude-code" / "marot-spotter-tool_heavy.jsonl", claude / "projects" / "-real"
    )
    with StdioClient(
        ["--persistence", f"claude:{claude}"],
        initialization_options={"search": {"openAt": "never"}},
    ) as each:
        yield each


def test_show_reads_the_page_the_four_requests_gave(client):
    ids = [r["header"]["id"] for r in client.request("sessionQuery/listSessions")]
    assert len(ids) >= 2
    for sid in ids:
        captured = client.request("sessionQuery/readTimeline", {"sessionId": sid})
        modes: list[tuple[bool, int | None]] = [(False, None), (True, None)]
        if captured["capturedThroughSeq"]:
            modes.append((False, captured["capturedThroughSeq"] // 2))
        for context, at in modes:
            page = show.read_page(client, sid, context, at)
            assert page == _four_requests(client, sid, context, at), (sid, context, at)
            for width in (80, 200):
                assert show.render(page, width, False) == show.render(
                    _four_requests(client, sid, context, at), width, False
                )


def test_the_html_export_embeds_what_the_three_requests_gave(client):
    for record in client.request("sessionQuery/listSessions"):
        sid = record["header"]["id"]
        params = {"sessionId": sid}
        data = html_export.page_data(client, sid)
        assert data["timeline"] == client.request("sessionQuery/readTimeline", params)
        assert data["records"] == client.request("sessionQuery/listEvents", params)
        assert data["events"] == client.request("sessionQuery/readSession", params)["events"]
        assert data["session"] == data["timeline"]["session"]
