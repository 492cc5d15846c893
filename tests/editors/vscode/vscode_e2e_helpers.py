"""code-server + headless Chromium helpers for the VS Code E2E tests: start code-server with the
built .vsix and given user settings in a private home, stop it by its process group, drive the
workbench."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.editors.vscode.vscode_helpers import build_vsix, code_server_dir, node24_bin, node_env
from tests.hub.hub_helpers import short_run_dir, using_hubs

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Workbench settings that keep the window quiet (no walkthroughs, AI panels or update checks).
QUIET_SETTINGS: dict[str, object] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "workbench.colorTheme": "Default Dark Modern",
    "chat.disableAIFeatures": True,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "window.commandCenter": False,
}


def require_e2e_tools() -> None:
    """Skips (or fails under CI / DSH_QUERY_E2E_REQUIRED) when code-server, Chromium or
    Playwright is missing."""
    reason = None
    if not (code_server_dir() / "node_modules" / ".bin" / "code-server").exists():
        reason = f"code-server is not installed in {code_server_dir()}"
    elif not Path(CHROMIUM).exists():
        reason = "Debian chromium is not installed"
    elif importlib.util.find_spec("playwright") is None:
        reason = "playwright is not installed in the venv"
    if reason:
        if os.environ.get("CI") or os.environ.get("DSH_QUERY_E2E_REQUIRED"):
            pytest.fail(f"{reason}: `make vscode-deps` installs it")
        pytest.skip(f"{reason}: run `make vscode-deps`")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text()[-4000:]
            raise AssertionError(f"code-server exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"code-server did not answer /healthz:\n{log.read_text()[-4000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stops code-server and everything it started (its own process group, led by our PID)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers (extension host, file watcher, our server)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(10)


@dataclass(frozen=True)
class CodeServer:
    url: str
    home: Path
    log: Path
    workspace: Path
    run_dir: Path  # XDG_RUNTIME_DIR: the hub the extension uses keeps its socket here


@contextmanager
def running_code_server(
    home: Path, settings: dict[str, object], artifacts: Path
) -> Iterator[CodeServer]:
    """code-server in `home` (HOME and the XDG folders inside it, and a short private
    XDG_RUNTIME_DIR for the hub the extension starts), the fresh .vsix installed, `settings` as
    the user's settings.json; logs copied to `artifacts` when it stops, hubs stopped with it."""
    vsix = build_vsix()
    user, extensions, workspace = home / "user", home / "extensions", home / "workspace"
    (user / "User").mkdir(parents=True)
    extensions.mkdir()
    workspace.mkdir()
    (workspace / "README.md").write_text("A workspace for the Session Query end-to-end test.\n")
    merged = {**QUIET_SETTINGS, **settings}
    (user / "User" / "settings.json").write_text(json.dumps(merged, indent=2))
    binary = str(code_server_dir() / "node_modules" / ".bin" / "code-server")
    run_dir = short_run_dir()
    env = node_env(
        HOME=str(home),
        XDG_RUNTIME_DIR=run_dir,
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        DSH_HOME=str(home / ".dsh"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
    )
    assert (node24_bin() / "node").exists()
    common = ["--user-data-dir", str(user), "--extensions-dir", str(extensions)]
    installed = subprocess.run(
        [binary, *common, "--install-extension", str(vsix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert installed.returncode == 0 and "successfully installed" in installed.stdout, (
        installed.stdout + installed.stderr
    )
    port = _free_port()
    config = home / "code-server.yaml"
    config.write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    log = home / "code-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                "--config",
                str(config),
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{port}",
                *common,
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--disable-getting-started-override",
                str(workspace),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        with using_hubs(run_dir):  # its hubs are stopped after code-server (never restarted)
            try:
                _wait_healthy(port, proc, log, timeout=120)
                url = f"http://127.0.0.1:{port}/?folder={workspace}"
                yield CodeServer(url, home, log, workspace, Path(run_dir))
            finally:
                _stop(proc)
    finally:
        artifacts.mkdir(parents=True, exist_ok=True)
        shutil.copy(log, artifacts / "code-server.log")
        logs = user / "logs"
        for found in sorted(logs.rglob("*.log")) if logs.exists() else []:
            if "exthost" in str(found) or "Session Query" in found.name:
                shutil.copy(found, artifacts / f"{found.parent.name}-{found.name}")


def _file_safe(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)[:40]


class Workbench:
    """Small helpers over the VS Code DOM (views are `.pane`s, tree rows `.monaco-list-row`)."""

    def __init__(self, page: Page, artifacts: Path) -> None:
        self.page = page
        self.artifacts = artifacts
        self.shots: list[Path] = []
        self._seen: set[str] = set()  # row texts the last wait_row scrolled past

    def new_window(self) -> Workbench:
        """A second VS Code window on the same code-server (its own extension host)."""
        browser = self.page.context.browser
        assert browser is not None
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(45_000)
        page.goto(self.page.url)
        page.wait_for_selector(".monaco-workbench", timeout=120_000)
        return Workbench(page, self.artifacts / "second-window")

    def shot(self, name: str) -> Path:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        self.shots.append(path)
        return path

    def pane(self, title: str) -> Locator:
        return self.page.locator(f'.pane:has(> .pane-header[aria-label^="{title}"])')

    def status_bar(self) -> str:
        """The status bar's text: where VS Code shows LSP window progress."""
        return self.page.locator(".part.statusbar").inner_text()

    def rows(self, title: str) -> Locator:
        return self.pane(title).locator(".monaco-list-row")

    def row(self, title: str, text: str) -> Locator:
        return self.rows(title).filter(has_text=text).first

    def labels(self, title: str) -> list[str]:
        rows = self.rows(title)
        return [
            rows.nth(i).get_attribute("aria-label") or rows.nth(i).inner_text()
            for i in range(rows.count())
        ]

    def quick_input(self) -> Locator:
        return self.page.locator(".quick-input-widget input.input")

    def quick_items(self) -> Locator:
        return self.page.locator(".quick-input-list .monaco-list-row")

    def wait_row(self, title: str, text: str, timeout: float = 60_000) -> Locator:
        """The row showing `text`, scrolling the (virtualized) list to find it."""
        row = self.row(title, text)
        self._seen = set()
        deadline = time.monotonic() + timeout / 1000
        while True:
            if row.count() and row.is_visible():
                return row
            if time.monotonic() > deadline:
                self.shot("failed-row-" + _file_safe(text))
                seen = "\n".join(sorted(self._seen))
                raise AssertionError(f"no row {text!r} in {title}; rows seen scrolling:\n{seen}")
            if not self._sweep(title, row):
                time.sleep(0.25)

    def _first_index(self, title: str) -> str | None:
        rows = self.rows(title)
        return rows.first.get_attribute("data-index") if rows.count() else None

    def _to_top(self, title: str) -> None:
        # one huge wheel delta is not always applied in full: step up until the first row shows
        for _ in range(50):
            before = self._first_index(title)
            if before == "0":
                return
            self.page.mouse.wheel(0, -1000)
            time.sleep(0.08)
            if self._first_index(title) == before:
                self.page.mouse.wheel(0, -1000)
                time.sleep(0.15)
                if self._first_index(title) == before:
                    return

    def _sweep(self, title: str, row: Locator) -> bool:
        """Scrolls the view's list from top to bottom once; True if `row` showed up."""
        lists = self.pane(title).locator(".monaco-list")
        if not lists.count() or not lists.first.is_visible():
            return False
        lists.first.hover()
        self._to_top(title)
        for _ in range(80):
            if row.count() and row.is_visible():
                return True
            before = self._first_index(title)
            self._seen.update(self.rows(title).all_inner_texts())
            self.page.mouse.wheel(0, 120)
            time.sleep(0.08)
            if self._first_index(title) == before and not (row.count() and row.is_visible()):
                # one more step can still reveal the last rows; stop when nothing moves twice
                self.page.mouse.wheel(0, 120)
                time.sleep(0.08)
                if self._first_index(title) == before:
                    return bool(row.count() and row.is_visible())
        return bool(row.count() and row.is_visible())

    def widen_sidebar(self, width: int = 520) -> None:
        """Drags the sash right of the side bar so that labels are readable in the screenshots."""
        box = self.page.locator(".part.sidebar").bounding_box()
        if not box or box["width"] >= width:
            return
        x, y = box["x"] + box["width"] + 1, box["y"] + box["height"] / 2
        self.page.mouse.move(x, y)
        self.page.mouse.down()
        self.page.mouse.move(x + (width - box["width"]), y, steps=8)
        self.page.mouse.up()
        self.page.mouse.move(box["x"] + width + 400, y)

    def palette(self, command: str) -> None:
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input.input")
        box.wait_for(state="visible", timeout=30_000)
        box.fill(">" + command)
        item = self.page.locator(".quick-input-list .monaco-list-row", has_text=command).first
        item.wait_for(state="visible", timeout=30_000)
        self.page.keyboard.press("Enter")

    def active_tab(self) -> str:
        tab = self.page.locator(".tabs-container .tab.active")
        tab.wait_for(state="visible", timeout=30_000)
        return tab.get_attribute("aria-label") or ""

    def editor_text(self) -> str:
        lines = self.page.locator(".editor-instance .monaco-editor .view-lines").first
        return lines.inner_text().replace("\u00a0", " ")

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.25)
        self.shot("failed-" + _file_safe(what))
        raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def open_workbench(url: str, artifacts: Path) -> Iterator[Workbench]:
    """Headless Debian Chromium on `url`, once `.monaco-workbench` shows."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(45_000)
            page.goto(url)
            page.wait_for_selector(".monaco-workbench", timeout=120_000)
            yield Workbench(page, artifacts)
        finally:
            browser.close()
