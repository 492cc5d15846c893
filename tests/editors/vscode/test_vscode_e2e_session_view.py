"""The session view (docs/views.md §3) in a real VS Code: code-server with the built .vsix, driven
by headless Debian Chromium through Playwright (the harness of tests/vscode_e2e_helpers.py).

The corpus: a copy of the Claude Code home of importers.md §1.5 (tests/fixtures/spec/claude, the
fixture the imported E2E test uses: the one Claude Code session here with a compaction) with the
real transcripts of tests/fixtures/real/claude-code beside it, and a JSONL root holding a
100,000-event dsh session written through the server's producer methods, as the other E2E tests
write theirs. Checked as a person would:

1. the Sessions tree's inline action opens claude-demo's view: the chart marks each replacement as
   a drop with its shadowed count (the rewind #22: 2, the compaction #29: 8); shadowed events carry
   the class as colour and word; "Only what the model sees now" hides them; choosing the step
   before the compaction (#24, step 5) shows the surface it saw; a row's Trace link fills the
   Trace view; dark and light screenshots;
2. the command with an id opens the 100,000-event session: the first screen's time (performance
   marks of the page) is written to artifacts/vscode-e2e-session-view/first-paint.json (the bench
   reports it); scrolling to the middle and the end keeps a few dozen rows in the DOM and fills
   them from readEvent windows.

Screenshots go to artifacts/vscode-e2e-session-view/; with DSH_QUERY_E2E_UPDATE_SCREENSHOT=1 the
README pictures (vscode-extension/media/session-view-*.png) are refreshed from this run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dsh_query_server.client import StdioClient

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import FrameLocator

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-session-view"
MEDIA = ROOT / "vscode-extension" / "media"
SPEC = ROOT / "tests" / "fixtures" / "spec" / "claude"
REAL = ROOT / "tests" / "fixtures" / "real" / "claude-code"
LONG_ID = "e2e-long-session"
LONG_EVENTS = 100_000
T0 = 1_764_460_800_000


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


# -- the 100,000-event session -------------------------------------------------------------------


def _long_events(total: int) -> list[dict[str, Any]]:
    """Turns of a coding agent: prompt, streamed answer, a tool call and its result, usage and the
    context window recorded; every 150 turns a compaction replaces the whole surface."""
    out: list[dict[str, Any]] = []
    nodes: list[int] = []
    turn = 0

    def add(event: dict[str, Any], surface: bool = False) -> int:
        seq = len(out)
        out.append({"time": T0 + seq * 100, **event})
        if surface:
            op = event.get("surfaceOp")
            if isinstance(op, dict):
                nodes.clear()
            nodes.append(seq)
        return seq

    while len(out) < total - 30:
        turn += 1
        add({"type": "turn/start", "data": {"turn": turn}})
        add(
            {
                "type": "request/context",
                "data": {"provider": "p", "model": "m", "contextWindow": 200_000},
            }
        )
        text = f"Turn {turn}: look at module {turn % 97} and tell me what **changes** are needed."
        message = {
            "id": f"u{turn}",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        }
        if turn % 150 == 0 and nodes:
            summary = dict(
                message,
                content=[
                    {"type": "text", "text": f"Summary of turns 1–{turn - 1}: modules reviewed."}
                ],
            )
            op = {"op": "replace", "start": nodes[0], "end": nodes[-1]}
            add(
                {
                    "type": "user/message",
                    "data": summary,
                    "surfaceOp": op,
                    "sourceEventSeqs": list(nodes),
                },
                True,
            )
        else:
            add({"type": "user/message", "data": message, "surfaceOp": "append"}, True)
        add({"type": "step/start", "data": {"turn": turn, "step": 1}})
        words = [f"word{(turn * 7 + k) % 50} " for k in range(15)]
        for w in words:
            chunk = {"type": "text-delta", "index": 0, "text": w}
            add({"type": "assistant/chunk", "data": {"turn": turn, "step": 1, "chunk": chunk}})
        call = {
            "type": "tool-call",
            "id": f"c{turn}",
            "name": "read",
            "arguments": json.dumps({"path": f"m{turn % 97}.py"}),
        }
        context = 400 * len(nodes) + 3000
        assistant = {
            "turn": turn,
            "step": 1,
            "message": {
                "id": f"a{turn}",
                "role": "assistant",
                "content": [{"type": "text", "text": "".join(words)}, call],
                "source": {"kind": "model", "provider": "p", "model": "m"},
            },
            "usage": {"inputTokens": 200, "cacheReadTokens": context - 200, "outputTokens": 60},
        }
        add({"type": "assistant/message", "data": assistant, "surfaceOp": "append"}, True)
        called = add(
            {
                "type": "tool/call",
                "data": {
                    "turn": turn,
                    "step": 1,
                    "callId": f"c{turn}",
                    "name": "read",
                    "arguments": "{}",
                },
            }
        )
        result_text = "\n".join(f"line {i} of m{turn % 97}.py" for i in range(20))
        block = {
            "type": "tool-result",
            "toolCallId": f"c{turn}",
            "content": [{"type": "text", "text": result_text}],
        }
        result = {
            "id": f"r{turn}",
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": f"c{turn}"},
        }
        add(
            {
                "type": "tool/result",
                "data": {"turn": turn, "step": 1, "message": result},
                "surfaceOp": "append",
                "sourceEventSeqs": [called],
            },
            True,
        )
        add({"type": "step/end", "data": {"turn": turn, "step": 1}})
        add({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
    while len(out) < total:
        add(
            {"type": "todo/write", "data": {"todos": [{"content": "ship it", "status": "pending"}]}}
        )
    return out


def _persist_long(root: Path) -> None:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(root.parent / "state"),
        "XDG_CACHE_HOME": str(root.parent / "cache"),
    }
    events = _long_events(LONG_EVENTS)
    with StdioClient(
        ["--persistence", f"jsonl:{root}"],
        initialization_options={"index": ":memory:", "checkpoint": {"mode": "manual"}},
        env=env,
    ) as client:
        client.request(
            "sessionStore/create",
            {"header": {"version": 0, "id": LONG_ID, "createdAt": T0, "cwd": "/srv/long"}},
        )
        for i in range(0, len(events), 5000):
            client.request(
                "sessionStore/append", {"sessionId": LONG_ID, "events": events[i : i + 5000]}
            )
        client.request("sessionStore/remove", {"sessionId": LONG_ID})


# -- code-server ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    base = tmp_path_factory.mktemp("vscode-e2e-session-view")
    claude = shutil.copytree(SPEC, base / "claude-home")
    for f in sorted(REAL.glob("*.jsonl")):
        (claude / "projects" / "-real").mkdir(parents=True, exist_ok=True)
        shutil.copy(f, claude / "projects" / "-real" / f.name)
    root = base / "jsonl-root"
    _persist_long(root)
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": [f"claude:{claude}", f"jsonl:{root}"],
        "dshQuery.index": ":memory:",
    }
    with running_code_server(base / "home", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def _view(wb: Workbench) -> FrameLocator:
    """The session page inside the (one) webview: VS Code nests it in two iframes."""
    return wb.page.frame_locator("iframe.webview.ready").frame_locator("iframe#active-frame")


def _run(wb: Workbench, command: str) -> None:
    """A palette command, by clicking its row (Enter takes whichever item ranks first)."""
    box = wb.quick_input()
    wb.page.keyboard.press("Escape")
    wb.page.keyboard.press("F1")
    box.wait_for(state="visible", timeout=30_000)
    box.fill(">" + command)
    wb.page.locator(".quick-input-list .monaco-list-row", has_text=command).first.click()


def _close_editors(wb: Workbench) -> None:
    _run(wb, "View: Close All Editors")
    wb.wait_for(lambda: wb.page.locator("iframe.webview.ready").count() == 0, "no webview left")


def _seqs(view: FrameLocator, selector: str) -> list[int]:
    return [int(s) for s in view.locator(selector).evaluate_all("ns => ns.map(n => n.dataset.seq)")]


def _theme(wb: Workbench, name: str) -> None:
    """Preferences: Color Theme, then ``name``; the webview's body gets VS Code's theme class."""
    rows = wb.page.locator(".quick-input-list .monaco-list-row")
    box = wb.quick_input()
    _run(wb, "Preferences: Color Theme")
    wb.wait_for(lambda: "Color Theme" in (box.get_attribute("placeholder") or ""), "the theme list")
    box.fill(name)
    rows.filter(has_text=name).first.click()
    body = _view(wb).locator("body")
    kind = "vscode-light" if "Light" in name else "vscode-dark"
    wb.wait_for(lambda: kind in (body.get_attribute("class") or ""), f"the {name} theme")
    time.sleep(1)


def _screenshot(wb: Workbench, name: str) -> None:
    path = wb.shot(name)
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, MEDIA / f"{name}.png")


def test_the_sessions_tree_opens_the_view_of_a_claude_session_with_a_compaction(
    workbench: Workbench,
) -> None:
    wb = workbench
    row = wb.wait_row("Sessions", "File cleanup", timeout=120_000)
    wb.widen_sidebar(420)
    row.hover()
    row.locator('.action-label[aria-label="Open Session View"]').click()
    view = _view(wb)
    view.locator("article.msg").first.wait_for(timeout=60_000)
    drops = view.locator(".drop")
    wb.wait_for(lambda: drops.count() == 2, "the two drops on the chart")
    marked = {d.get_attribute("data-seq"): d.get_attribute("data-shadowed") for d in drops.all()}
    assert marked == {"22": "2", "29": "8"}
    assert "8 events, #2–#26, replaced by #29" in (
        view.locator('.drop[data-seq="29"]').get_attribute("aria-label") or ""
    )
    shadowed = view.locator("article.msg.surface-shadowed")
    assert shadowed.count() >= 5
    for msg in shadowed.all():
        assert msg.locator(".cls-shadowed").inner_text() == "shadowed"
    _screenshot(wb, "session-view-dark")

    view.locator("#only-now").click()
    view.locator("body[data-mode=now]").wait_for()
    assert view.locator("article.msg.surface-shadowed").count() == 0
    assert _seqs(view, "article.msg") == [29, 33, 35]
    view.locator('.divider[data-seq="29"] button').click()
    view.locator('article.msg[data-seq="2"]').wait_for()
    assert _seqs(view, "article.msg") == [2, 5, 6, 9, 12, 22, 24, 26, 29, 33, 35]

    view.locator(".plot").focus()
    wb.page.keyboard.press("End")
    wb.page.keyboard.press("ArrowLeft")
    wb.page.keyboard.press("Enter")
    view.locator("body[data-mode=point]").wait_for()
    assert "What the model saw when it wrote #24 (step 5)" in view.locator(".banner").inner_text()
    assert _seqs(view, "article.msg") == [2, 5, 6, 9, 12, 22]
    wb.shot("step-5")

    view.locator(".banner button").click()
    view.locator("body[data-mode=log]").wait_for()
    _theme(wb, "Light Modern")
    _screenshot(wb, "session-view-light")
    _theme(wb, "Dark Modern")


def test_a_row_links_to_the_trace_view(workbench: Workbench) -> None:
    wb = workbench
    view = _view(wb)
    view.locator('article.msg[data-seq="2"] button[aria-label="Trace event #2"]').click()
    header = wb.pane("Trace").locator(".pane-header")
    wb.wait_for(lambda: "event 2 of claude-demo" in header.inner_text(), "the Trace view on #2")
    wb.wait_row("Trace", "Replaced by")


def test_a_100000_event_session_opens_fast_and_scrolls_windowed(workbench: Workbench) -> None:
    wb = workbench
    wb.wait_row("Sessions", "Turn 1: look at module 1", timeout=120_000)  # the server is up
    _close_editors(wb)
    _run(wb, "Session Query: Open Session View")
    box = wb.quick_input()
    wb.wait_for(
        lambda: box.get_attribute("placeholder") == "Choose a session", "the session picker"
    )
    box.fill(LONG_ID)
    wb.page.locator(".quick-input-list .monaco-list-row", has_text=LONG_ID).first.wait_for(
        state="visible"
    )
    started = time.monotonic()
    wb.page.keyboard.press("Enter")
    view = _view(wb)
    view.locator("body[data-first-screen]").wait_for(timeout=120_000)
    wall = time.monotonic() - started
    marks = view.locator("body").evaluate(
        "() => Object.fromEntries(['dsh-start', 'dsh-timeline', 'dsh-chart', 'dsh-records',"
        " 'dsh-first-screen']"
        ".map(n => [n, performance.getEntriesByName(n)[0]?.startTime]))"
    )
    paint = {
        "session": LONG_ID,
        "events": LONG_EVENTS,
        "firstScreenMs": marks["dsh-first-screen"],
        "timelineMs": marks["dsh-timeline"],
        "chartMs": marks["dsh-chart"],
        "recordsMs": marks["dsh-records"],
        "scriptStartMs": marks["dsh-start"],
        "fromPickSeconds": round(wall, 3),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (ARTIFACTS / "first-paint.json").write_text(json.dumps(paint, indent=2) + "\n")
    print(f"session view first paint: {paint}")
    _screenshot(wb, "session-view-long")
    assert view.locator(".drop").count() > 0
    assert view.locator("article.msg:not(:has(.loading))").count() > 0

    rows = view.locator(".vrow")
    for where in ("n.scrollHeight / 2", "n.scrollHeight"):
        view.locator(".vlist").evaluate(f"n => {{ n.scrollTop = {where} }}")
        wb.wait_for(
            lambda: rows.count() > 0 and view.locator(".loading").count() == 0,
            "the rows in view filled from readEvent windows",
        )
        assert rows.count() < 200, rows.count()
        shown = _seqs(view, "article.msg")
        assert shown and min(shown) > 1000, shown
    assert max(_seqs(view, "article.msg")) > LONG_EVENTS - 100
    wb.shot("long-session-end")
