"""The README's picture of ``dsh-query show`` (views.md §3.2), taken from a real fixture.

The Claude Code worked example of importers.md §1.5 (tests/fixtures/spec/claude: a rewind and a
compaction) is read from a real server and drawn as ``dsh-query show`` draws it on an 80-column
colour terminal; the last screen (what `G` in the pager shows) is recorded by rich as SVG and
photographed by headless Debian Chromium (Playwright). The picture goes to
artifacts/terminal-screenshot/; with DSH_QUERY_E2E_UPDATE_SCREENSHOT=1 it also replaces
vscode-extension/media/dsh-query-show.png (which README.md shows).
"""

from __future__ import annotations

import importlib.util
import io
import os
import pathlib
import re
import shutil

import pytest

from dsh_query_server.cli import show
from dsh_query_server.client import StdioClient
from tests.import_helpers import SPEC

CHROMIUM = "/usr/bin/chromium"
ROOT = pathlib.Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "artifacts" / "terminal-screenshot"
MEDIA = ROOT / "vscode-extension" / "media"
COLUMNS, ROWS = 80, 46


def last_screen(home: pathlib.Path) -> list[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(home.parent / "state")}
    with StdioClient(["--persistence", f"claude:{home}"], env=env) as client:
        page = show.read_page(client, "claude-demo", context=False, at=None)
    return show.render(page, COLUMNS, colour=True).splitlines()[-ROWS:]


def test_a_screenshot_of_dsh_query_show(tmp_path: pathlib.Path) -> None:
    if not pathlib.Path(CHROMIUM).exists() or importlib.util.find_spec("playwright") is None:
        pytest.skip("chromium or playwright is missing: run `make vscode-deps`")
    from playwright.sync_api import sync_playwright
    from rich.console import Console
    from rich.text import Text

    lines = last_screen(shutil.copytree(SPEC / "claude", tmp_path / "claude"))
    plain = [Text.from_ansi(line).plain for line in lines]
    # the screen shows the two dividers, shadowed and current messages, and folded runs
    assert any("Compaction: 8 events, #2–#26, replaced by #29" in line for line in plain)
    assert any(line.startswith("▌ user #16 · shadowed") for line in plain)
    assert any(line.startswith("▌ user #33 · current") for line in plain)
    assert any(line.startswith("  ▸ log-only · ") for line in plain)

    record = Console(
        record=True,
        file=io.StringIO(),
        width=COLUMNS,
        force_terminal=True,
        color_system="truecolor",
    )
    for line in lines:
        record.print(Text.from_ansi(line), no_wrap=True, overflow="crop")
    svg = record.export_svg(title="dsh-query show claude-demo  (the last screen)")
    # No web fonts (the picture is taken offline): the browser's monospace font draws it.
    svg = re.sub(r"@font-face \{.*?\}", "", svg, flags=re.S)
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()  # type: ignore[union-attr]
    svg = svg.replace("<svg ", f'<svg width="{width}" height="{height}" ', 1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "dsh-query-show.svg").write_text(svg)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1400}, device_scale_factor=1)
            page.set_content(
                '<html><body style="margin:0;background:#fff">'
                f'<div id="shot" style="display:inline-block">{svg}</div></body></html>'
            )
            shot = page.locator("#shot")
            box = shot.bounding_box()
            assert box and box["width"] > 600 and box["height"] > 600, box
            path = ARTIFACTS / "dsh-query-show.png"
            shot.screenshot(path=str(path))
        finally:
            browser.close()
    assert path.stat().st_size > 20_000
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, MEDIA / "dsh-query-show.png")
