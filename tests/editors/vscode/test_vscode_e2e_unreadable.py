"""Issue 25 finding 1 in a real VS Code (code-server + headless Chromium, vscode_e2e_helpers.py):
a real-sized dsh home (tests/real_home.py: 156 logs from the real transcripts, one garbled copy,
one with a damaged header) keeps the Sessions view working; the view shows a warning badge and a
"Show unreadable sessions" row whose tooltip names the damaged files, the row lists them in a
quick pick, and Search Sessions still finds sessions and adds the garbled one it left out.

Screenshots go to artifacts/vscode-e2e-unreadable/."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator

import pytest

from tests.real_home import GARBLED, HEADLESS, RealHome, real_dsh_home

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-unreadable"


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> RealHome:
    return real_dsh_home(tmp_path_factory.mktemp("real-home"))


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory, home: RealHome) -> Iterator[Workbench]:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    base = tmp_path_factory.mktemp("vscode-e2e-unreadable")
    # No warm-up: its reconcile would name the garbled log before the search does, and the
    # first badge's count would depend on timing.
    config = base / "server.json"
    config.write_text(json.dumps({"search": {"warmUp": False}}))
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": home.uri,
        "dshQuery.index": ":memory:",
        "dshQuery.serverArgs": ["--config", str(config)],
    }
    with running_code_server(base / "home", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def _rest(wb: Workbench) -> None:
    wb.page.keyboard.press("Escape")
    box = wb.page.locator(".part.editor").bounding_box()
    if box:
        wb.page.mouse.move(box["x"] + box["width"] - 40, box["y"] + box["height"] - 40)
    time.sleep(0.6)


def _badge(wb: Workbench) -> str:
    badge = wb.page.locator('.activitybar [aria-label^="Session Query"] .badge-content').first
    return badge.inner_text() if badge.count() else ""


def test_the_sessions_view_names_the_skipped_transcript(workbench: Workbench, home: RealHome):
    wb = workbench
    wb.wait_for(lambda: _badge(wb) == "1", "the badge to say 1", timeout=120)
    wb.widen_sidebar(560)
    row = wb.wait_row("Sessions", "Show unreadable sessions")
    assert row.get_attribute("data-index") == "0"  # the first row
    assert "Show unreadable sessions (1)" in row.inner_text()
    assert row.locator(".codicon-warning").count() == 1
    # the listing still shows the other sessions (the garbled one's header is fine)
    assert wb.rows("Sessions").count() > 5
    row.hover()
    hover = wb.page.locator(".monaco-hover, .workbench-hover").filter(has_text=HEADLESS).first
    hover.wait_for(state="visible", timeout=30_000)
    assert str(home.headless) in hover.inner_text()
    wb.shot("sessions-view-unreadable")
    _rest(wb)


def test_search_adds_the_garbled_session_and_the_row_lists_both(
    workbench: Workbench, home: RealHome
):
    wb = workbench
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.fill("spotter")
    wb.quick_items().first.wait_for(state="visible", timeout=60_000)
    assert wb.quick_items().count() > 0
    wb.wait_for(lambda: _badge(wb) == "2", "the badge to count the garbled session")
    _rest(wb)
    row = wb.wait_row("Sessions", "Show unreadable sessions (2)")
    row.click()
    items = wb.quick_items()
    items.first.wait_for(state="visible", timeout=30_000)
    texts = items.all_inner_texts()
    assert any(GARBLED in t and "unparsable committed event" in t for t in texts), texts
    assert any(HEADLESS in t and "header line is not valid JSON" in t for t in texts), texts
    wb.shot("show-unreadable-sessions")
    wb.page.keyboard.type(GARBLED)
    wb.page.keyboard.press("Enter")
    wb.wait_for(lambda: "session.jsonl" in wb.active_tab(), "the garbled log to open")
    wb.shot("garbled-log-opened")
    _rest(wb)
