"""The Usage view (docs/usage.md §5) in a real VS Code: code-server with the built .vsix, driven by
headless Debian Chromium through Playwright (the harness of vscode_e2e_helpers.py).

The corpus is a Claude Code home from bench/usage.py's generator (responses written as several
records each, sub-agents), 40 sessions in January 2026. Checked as a person would: the palette
command opens the view; "All time" shows the chart stacked by model, the totals, the tables by
project and agent and the sessions; the totals are those `dsh-query usage --by day --json`
prints for the same home; a session row opens that session's view, whose header shows the same
session's totals and cost. Screenshots go to artifacts/vscode-e2e-usage/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bench.usage import claude_usage_home

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import FrameLocator

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-usage"


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("vscode-e2e-usage")
    claude_usage_home(base / "claude-home", 40, seed=5)
    return base


@pytest.fixture(scope="module")
def workbench(home: Path) -> Iterator[Workbench]:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": [f"claude:{home / 'claude-home'}"],
        "dshQuery.index": ":memory:",
    }
    with running_code_server(home / "code", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def _frames(wb: Workbench) -> list[FrameLocator]:
    """The page inside each webview (VS Code nests it in two iframes), in DOM order."""
    count = wb.page.locator("iframe.webview.ready").count()
    hosts = wb.page.frame_locator("iframe.webview.ready")
    return [hosts.nth(i).frame_locator("iframe#active-frame") for i in range(count)]


def _run(wb: Workbench, command: str) -> None:
    box = wb.quick_input()
    wb.page.keyboard.press("Escape")
    wb.page.keyboard.press("F1")
    box.wait_for(state="visible", timeout=30_000)
    box.fill(">" + command)
    wb.page.locator(".quick-input-list .monaco-list-row", has_text=command).first.click()


def _cli_totals(home: Path) -> dict[str, object]:
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cli-cache")}
    env["XDG_STATE_HOME"] = str(home / "cli-state")
    done = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "usage", "--by", "day", "--json",
         "--tz", "UTC", "--persistence", f"claude:{home / 'claude-home'}"],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)["total"]


def test_the_usage_view_renders_and_its_totals_are_the_clis(
    workbench: Workbench, home: Path
) -> None:
    wb = workbench
    wb.wait_row("Sessions", "next step", timeout=120_000)
    _run(wb, "Session Query: Open Usage View")
    wb.wait_for(lambda: len(_frames(wb)) == 1, "the Usage webview")
    view = _frames(wb)[0]
    view.locator("h1", has_text="Usage").wait_for(timeout=60_000)
    view.locator("button.act", has_text="All time").click()
    sessions = view.locator('.usage-table[data-kind="session"] tbody tr')
    wb.wait_for(lambda: sessions.count() >= 40, "every session's row")
    view.locator(".chart .plot canvas").first.wait_for(timeout=30_000)

    shown = {
        key: view.locator(f'.totals .total[data-key="{key}"]').get_attribute("data-value")
        for key in ("responses", "input", "cacheRead", "cacheWrite", "output", "cost")
    }
    cli = _cli_totals(home)
    assert shown == {
        "responses": str(cli["responses"]),
        "input": str(cli["input"]),
        "cacheRead": str(cli["cacheRead"]),
        "cacheWrite": str(cli["cacheWrite"]),
        "output": str(cli["output"]),
        "cost": str(cli["costUsd"]),
    }
    legend = view.locator(".chart .legend-item").all_inner_texts()
    assert set(legend) == {
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-5-20251101",
        "claude-haiku-4-5-20251001",
    }
    agents = view.locator('.usage-table[data-kind="agent"] tbody tr td.key').all_inner_texts()
    assert agents == ["claude-code"]
    projects = view.locator('.usage-table[data-kind="project"] tbody tr')
    assert projects.count() == 1  # every generated record says cwd /work/proj
    wb.shot("usage-view")

    key = sessions.first.locator("td.key")
    sid = key.get_attribute("data-session-id")
    assert sid
    # the row names the session by its title (readTitles), beside its id's first 8 characters
    key.locator(".title", has_text="next step").wait_for(timeout=30_000)
    assert key.locator("button").inner_text() == sid[:8]
    key.locator("button").click()
    wb.wait_for(lambda: len(_frames(wb)) == 2, "the session view beside it")

    def usage_line() -> str:
        for frame in _frames(wb):
            if frame.locator("h1", has_text=sid).count() and frame.locator(".usage").count():
                return frame.locator(".session-head .usage").inner_text()
        return ""

    wb.wait_for(lambda: bool(usage_line()), "the session view's usage line")
    line = usage_line()
    assert line.startswith("Usage: ") and "cost $" in line
    wb.shot("usage-session-view")
