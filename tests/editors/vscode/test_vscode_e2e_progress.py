"""Work-done progress in a real VS Code (docs/protocol.md §8): code-server with the built .vsix,
driven by headless Debian Chromium through Playwright (vscode_e2e_helpers.py).

The hub runs with the server's default delay and without the warm-up (``--config``), over a
Claude Code home large enough that the first search builds the index for several seconds. The
palette search must show the server's progress where VS Code shows LSP window progress (the
status bar): ``dsh-query searchSessions`` with what runs (``indexing N of M transcripts``) and,
once the search answers, it is gone. Screenshots go to artifacts/vscode-e2e-progress/.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator

import pytest

from bench.usage import claude_usage_home

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-progress"
SESSIONS = 400


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    base = tmp_path_factory.mktemp("vscode-e2e-progress")
    claude_usage_home(base / "claude-home", SESSIONS, seed=28)
    config = base / "hub.json"
    config.write_text(json.dumps({"search": {"warmUp": False}}))
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": [f"claude:{base / 'claude-home'}"],
        "dshQuery.index": str(base / "index.sqlite"),
        "dshQuery.serverArgs": ["--config", str(config)],
    }
    with running_code_server(base / "code", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def test_a_long_first_search_shows_progress_in_the_status_bar(workbench: Workbench) -> None:
    wb = workbench
    wb.wait_row("Sessions", "next step", timeout=300_000)  # the extension is up, the hub too
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.wait_for(state="visible")
    box.fill("next step")
    wb.wait_for(
        lambda: "dsh-query searchSessions" in wb.status_bar(), "the search's progress", timeout=120
    )
    seen: list[str] = []

    def counting() -> bool:
        seen.append(wb.status_bar())
        return "indexing" in seen[-1]

    # The text is the one read when the count showed: a fast build may end right after it.
    wb.wait_for(counting, "the build's count", timeout=120)
    shot = wb.shot("search-progress-in-status-bar")
    assert "transcripts" in seen[-1], seen[-1]
    # The answer ends the progress: the hits are listed and the status bar item is gone.
    items = wb.quick_items()
    wb.wait_for(lambda: items.count() > 0, "the first page of hits", timeout=600)
    wb.wait_for(
        lambda: "dsh-query searchSessions" not in wb.status_bar(), "the progress ended", timeout=60
    )
    wb.shot("search-answered")
    assert shot.exists()
