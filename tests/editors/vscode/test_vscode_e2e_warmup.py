"""The index warm-up in a real VS Code (semantics.md §6.5 "Warm-up progress", protocol.md §8):
code-server with the built .vsix, driven by headless Debian Chromium through Playwright
(vscode_e2e_helpers.py).

The hub runs with its defaults (the warm-up on) over a Claude Code home large enough that the
index build takes several seconds. Nobody has asked anything yet, and VS Code's status bar shows
``dsh-query warmUp`` with what runs (``indexing N of M transcripts``); it goes when the build
ends, and a search then answers from the warm index without a build of its own. Screenshots go
to artifacts/vscode-e2e-warmup/.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator

import pytest

from bench.usage import claude_usage_home

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-warmup"
SESSIONS = 400


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    base = tmp_path_factory.mktemp("vscode-e2e-warmup")
    claude_usage_home(base / "claude-home", SESSIONS, seed=29)
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": [f"claude:{base / 'claude-home'}"],
        "dshQuery.index": str(base / "index.sqlite"),
    }
    with running_code_server(base / "code", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            # Opening the view activates the extension, which starts the hub: the warm-up runs.
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def test_the_warm_up_shows_in_the_status_bar_before_anything_is_asked(
    workbench: Workbench,
) -> None:
    wb = workbench
    # VS Code shows one window progress at a time (the tree's own request may take the item
    # for a moment): wait for the warm-up's count itself, then take the screenshot.
    wb.wait_for(
        lambda: all(w in wb.status_bar() for w in ("dsh-query warmUp", "indexing", "transcripts")),
        "the warm-up's count",
        timeout=300,
    )
    shot = wb.shot("warm-up-in-status-bar")
    wb.wait_for(lambda: "dsh-query warmUp" not in wb.status_bar(), "the warm-up's end", timeout=600)
    # The index is warm: a search answers without a build of its own (no searchSessions
    # progress, which a build would show past the delay), and lists its hits.
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.wait_for(state="visible")
    box.fill("next step")
    items = wb.quick_items()
    wb.wait_for(lambda: items.count() > 0, "the first page of hits", timeout=120)
    wb.shot("search-after-warm-up")
    assert "dsh-query searchSessions" not in wb.status_bar(), wb.status_bar()
    assert shot.exists()
