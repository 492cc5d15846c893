"""``dsh-query export ID --html`` (views.md §4): the command, and the page it writes opened in
headless Debian Chromium (Playwright), which must show what the VS Code session view shows
(the same bundle) and load nothing but the file itself.

The session is the Claude Code worked example of importers.md §1.5 (tests/fixtures/spec/claude,
the one the imported E2E test uses): two replacements (a rewind at #22 shadowing 2 events, the
compaction at #29 shadowing 8), six model responses; the last response before the compaction is
#24 (step 5), which saw #2, #5, #6, #9, #12 and #22."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.import_helpers import SPEC

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = "/usr/bin/chromium"
ROOT = pathlib.Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "session-view-html"


def dsh_query(
    *args: str, cwd: pathlib.Path, home: pathlib.Path
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    base = tmp_path_factory.mktemp("html-export")
    home = shutil.copytree(SPEC / "claude", base / "claude-home")
    out = base / "claude-demo.html"
    done = dsh_query(
        "export", "claude-demo", "--html", "--persistence", f"claude:{home}", "-o", str(out),
        cwd=base, home=base,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    return out


def test_the_file_is_private_self_contained_and_never_replaced_silently(exported, tmp_path):
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    text = exported.read_text("utf-8")
    assert "default-src 'none'" in text and "<script src" not in text
    assert "http://" not in text.split('id="dsh-data"')[0]  # nothing to fetch in the head
    again = dsh_query(
        "export", "claude-demo", "--html", "--persistence", f"claude:{SPEC / 'claude'}",
        "-o", str(exported), cwd=tmp_path, home=tmp_path,
    )  # fmt: skip
    assert again.returncode == 2 and "exists (--force replaces it)" in again.stderr
    assert exported.read_text("utf-8") == text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--descendants"], "--descendants does not apply to --html"),
        (["--json"], "--json does not apply to --html"),
        (["--persistence", "none"], "SESSION_QUERY_SESSION_NOT_FOUND"),
    ],
)
def test_refusals(tmp_path, args, message):
    done = dsh_query("export", "claude-demo", "--html", *args, cwd=tmp_path, home=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.html"))


# -- the page in a browser -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser_page(exported: pathlib.Path) -> Iterator[tuple[Page, list[str]]]:
    if not pathlib.Path(CHROMIUM).exists() or importlib.util.find_spec("playwright") is None:
        if os.environ.get("CI") or os.environ.get("DSH_QUERY_E2E_REQUIRED"):
            pytest.fail("chromium or playwright is missing: `make vscode-deps` installs them")
        pytest.skip("chromium or playwright is missing: run `make vscode-deps`")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="light")
            requests: list[str] = []
            errors: list[str] = []

            def log(route) -> None:  # every request, answered only when it is the file
                requests.append(route.request.url)
                if route.request.url == exported.as_uri():
                    route.continue_()
                else:
                    route.abort()

            page.route("**/*", log)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(exported.as_uri())
            page.wait_for_selector("article.msg", timeout=30_000)
            assert errors == []
            yield page, requests
        finally:
            browser.close()


def seqs(page: Page, selector: str) -> list[int]:
    return [int(s) for s in page.eval_on_selector_all(selector, "ns => ns.map(n => n.dataset.seq)")]


def test_the_chart_marks_each_compaction_with_its_shadowed_count(browser_page):
    page, _ = browser_page
    drops = page.locator(".drop")
    assert drops.count() == 2
    marked = {d.get_attribute("data-seq"): d.get_attribute("data-shadowed") for d in drops.all()}
    assert marked == {"22": "2", "29": "8"}
    label = page.locator('.drop[data-seq="29"]').get_attribute("aria-label") or ""
    assert "8 events, #2–#26, replaced by #29" in label
    assert "≈ tokens (estimate)" in page.locator(".legend").inner_text()
    page.screenshot(path=str(ARTIFACTS / "01-whole-log.png"))


def test_shadowed_events_carry_the_class_as_colour_and_word(browser_page):
    page, _ = browser_page
    shadowed = page.locator("article.msg.surface-shadowed")
    assert shadowed.count() >= 5
    for row in shadowed.all():
        assert row.locator(".cls-shadowed").inner_text() == "shadowed"
    page.locator(".vlist").evaluate("n => { n.scrollTop = n.scrollHeight }")
    divider = page.locator('.divider[data-seq="29"]')
    assert "Compaction: 8 events, #2–#26, replaced by #29" in divider.inner_text()


def test_the_toggle_shows_only_what_the_model_sees_now(browser_page):
    page, _ = browser_page
    page.click("#only-now")
    page.wait_for_selector("body[data-mode=now]")
    assert page.get_attribute("#only-now", "aria-pressed") == "true"
    assert page.locator("article.msg.surface-shadowed").count() == 0
    assert seqs(page, "article.msg") == [29, 33, 35]
    # the compaction's divider opens what it shadowed in place, the rewind's divider inside it
    page.locator('.divider[data-seq="29"] button').click()
    page.wait_for_selector('article.msg[data-seq="2"]')
    assert seqs(page, "article.msg") == [2, 5, 6, 9, 12, 22, 24, 26, 29, 33, 35]
    assert page.locator('.divider[data-seq="22"]').count() == 1
    page.screenshot(path=str(ARTIFACTS / "02-now-expanded.png"))
    page.click("#only-now")
    page.wait_for_selector("body[data-mode=log]")


def test_choosing_the_step_before_the_compaction_shows_what_the_model_saw(browser_page):
    page, _ = browser_page
    plot = page.locator(".plot")
    plot.focus()
    page.keyboard.press("End")  # step 6
    page.keyboard.press("ArrowLeft")  # step 5: #24, the last response before #29
    page.keyboard.press("Enter")
    page.wait_for_selector("body[data-mode=point]")
    banner = page.locator(".banner").inner_text()
    assert "What the model saw when it wrote #24 (step 5)" in banner, banner
    assert seqs(page, "article.msg") == [2, 5, 6, 9, 12, 22]
    page.screenshot(path=str(ARTIFACTS / "03-step-5.png"))
    page.locator('.drop[data-seq="29"]').click()  # the surface the compaction replaced
    page.wait_for_function("document.querySelector('.banner').innerText.includes('#29')")
    assert seqs(page, "article.msg") == [2, 5, 6, 9, 12, 22, 24, 26]
    page.locator(".banner button").click()
    page.wait_for_selector("body[data-mode=log]")


def test_the_page_loaded_nothing_but_the_file(browser_page, exported):
    _, requests = browser_page
    assert requests == [exported.as_uri()]
