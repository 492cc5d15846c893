"""Claude Code and Codex sessions in a real VS Code (issue 14; editor.md testing layer 3).

code-server gets the freshly built .vsix and `dshQuery.persistence` = [claude:<home>,
codex:<home>] (one composite mount) over copies of the spec's worked-example homes
(tests/fixtures/spec/claude and codex), with HOME, the agents' homes and the XDG folders inside
a temporary folder, so nothing of the machine's own histories shows. Headless Chromium then
checks what a person would:

1. the Sessions view lists the Claude session and the Codex session, each with its agent's
   icon and name in the description;
2. the Claude session's Events view shows the compacted user message (#16) as shadowed; selecting
   it opens its event window and the Trace view shows it replaced by #22 (chain #22, #29);
   the screenshot is vscode-extension/media/imported-trace.png;
3. the Codex session's events are listed; its rolled-back user message (#28) traces to the
   message that replaced it (#34).

Screenshots and logs go to artifacts/vscode-e2e-imported/. With DSH_QUERY_E2E_UPDATE_SCREENSHOT=1
the trace picture is refreshed in vscode-extension/media/ from this run.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator

import pytest

from tests.editors.vscode.vscode_e2e_helpers import (
    Workbench,
    open_workbench,
    require_e2e_tools,
    running_code_server,
)
from tests.editors.vscode.vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-imported"
SPEC = ROOT / "tests" / "fixtures" / "spec"
MEDIA = ROOT / "vscode-extension" / "media"

CLAUDE_ID = "claude-demo"
CLAUDE_TITLE = "File cleanup"
CODEX_ID = "019b7e26-5500-7000-8000-0000000000f1"
CODEX_TITLE = "Demo fork"


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    base = tmp_path_factory.mktemp("vscode-e2e-imported")
    claude = shutil.copytree(SPEC / "claude", base / "claude-home")
    codex = shutil.copytree(SPEC / "codex", base / "codex-home")
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": [f"claude:{claude}", f"codex:{codex}"],
        "dshQuery.index": ":memory:",
        "dshQuery.readWindow.before": 2,
        "dshQuery.readWindow.after": 2,
    }
    with running_code_server(base / "home", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def _select_session(wb: Workbench, title: str, session_id: str) -> None:
    wb.row("Sessions", title).locator(".monaco-tl-contents").click()
    header = wb.pane("Events").locator(".pane-header")
    wb.wait_for(lambda: session_id in header.inner_text(), f"the Events view of {session_id}")


def _trace_of(wb: Workbench, seq: int, etype: str) -> None:
    """Selects event #seq in the Events view: its window opens with the target marked and the
    Trace view switches to the event's trace."""
    row = wb.wait_row("Events", f"#{seq} {etype}")
    assert "shadowed" in row.inner_text(), row.inner_text()
    row.locator(".monaco-tl-contents").click()
    wb.wait_for(lambda: f"▶ target: seq {seq} {etype}" in wb.editor_text(), "the marked target")
    target = wb.wait_row("Trace", f"#{seq} {etype}")
    wb.wait_for(lambda: "target" in target.inner_text(), f"#{seq} as the trace's target")
    assert "shadowed" in target.inner_text(), target.inner_text()


def _replaced_by(wb: Workbench) -> str:
    """The text of the one event under the Trace view's "Replaced by" group."""
    group = wb.wait_row("Trace", "Replaced by")
    assert "1" in group.inner_text(), group.inner_text()
    index = int(group.get_attribute("data-index") or -1)
    child = wb.rows("Trace").locator(f'xpath=self::*[@data-index="{index + 1}"]')
    wb.wait_for(lambda: child.count() == 1, "the replacing event under Replaced by")
    assert child.get_attribute("aria-level") == "2"
    return child.inner_text()


def test_sessions_view_shows_the_claude_and_the_codex_session(workbench: Workbench) -> None:
    wb = workbench
    claude = wb.wait_row("Sessions", CLAUDE_TITLE, timeout=120_000)
    wb.widen_sidebar()
    codex = wb.wait_row("Sessions", CODEX_TITLE)
    wb.shot("sessions")
    # each row's accessible label carries the server's tooltip (id, source); the description
    # names the agent, and the icon is the agent's codicon
    assert f"id: {CLAUDE_ID}" in (claude.get_attribute("aria-label") or "")
    assert f"id: {CODEX_ID}" in (codex.get_attribute("aria-label") or "")
    assert "claude-code" in claude.inner_text() and "persisted" in claude.inner_text()
    assert "codex" in codex.inner_text() and "persisted" in codex.inner_text()
    assert claude.locator(".codicon-sparkle").count() == 1
    assert codex.locator(".codicon-robot").count() == 1
    assert claude.locator(".codicon-robot").count() == 0
    assert codex.locator(".codicon-sparkle").count() == 0


def test_claude_compacted_message_traces_to_its_replacement(workbench: Workbench) -> None:
    wb = workbench
    _select_session(wb, CLAUDE_TITLE, CLAUDE_ID)
    # the compaction's summary is current; what it replaced is shadowed
    assert "current" in wb.wait_row("Events", "#29 user/message").inner_text()
    _trace_of(wb, 16, "user/message")
    assert "delete b.py" in wb.editor_text()
    # the replacing event is #22 ("no, rename it"), itself replaced by the summary #29
    assert "#22 user/message" in _replaced_by(wb)
    chain = wb.row("Trace", "Replacement chain")
    wb.wait_for(lambda: "2" in chain.inner_text(), "the chain of two")
    wb.wait_row("Trace", "#29 user/message")
    wb.page.keyboard.press("Escape")
    box = wb.page.locator(".part.editor").bounding_box()
    if box:  # the mouse away from the lists: no hover card over the picture
        wb.page.mouse.move(box["x"] + box["width"] - 40, box["y"] + box["height"] - 40)
    time.sleep(0.8)
    path = wb.shot("claude-trace")
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, MEDIA / "imported-trace.png")


def test_codex_events_are_listed_and_a_rolled_back_message_traces(workbench: Workbench) -> None:
    wb = workbench
    _select_session(wb, CODEX_TITLE, CODEX_ID)
    assert "log-only" in wb.wait_row("Events", "#0 codex/session_meta").inner_text()
    assert "current" in wb.wait_row("Events", "#34 user/message").inner_text()
    _trace_of(wb, 28, "user/message")
    assert "thanks" in wb.editor_text()
    assert "#34 user/message" in _replaced_by(wb)
    wb.shot("codex-trace")
