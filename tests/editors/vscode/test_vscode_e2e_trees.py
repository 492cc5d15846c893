"""The Session Query trees in a real VS Code (issue 24): code-server with the built .vsix, driven by
headless Debian Chromium through Playwright (the harness of vscode_e2e_helpers.py).

The corpus is one Claude Code home: the importers.md §1.5 worked example (claude-demo, with its
sub-agent and, added beside it, a compaction helper transcript) and the real transcripts of
tests/fixtures/real/claude-code, one of them given a long title with a `custom-title` record as
Claude Code's /rename writes it. Checked as a person would:

1. sub-agents are nested under the session they serve, the compaction helper marked as one, and
   not listed at the top;
2. a long title is cut so that the agent, date and state after it stay visible;
3. events show their class as a coloured icon and as the word;
4. Search Sessions shows the sessions' titles (not their ids) with the typed phrase highlighted;
5. the Trace view follows the selection: after an event of one session was selected, opening a
   search hit in another session shows the hit's trace (it used to keep the previous event), and
   an event selected in the Sessions view's Events group is traced too.

Screenshots go to artifacts/vscode-e2e-trees/; with DSH_QUERY_E2E_UPDATE_SCREENSHOT=1 the nested
tree picture (vscode-extension/media/sessions-nested.png) is refreshed from this run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator

import pytest

from tests.import_helpers import REAL, claude_home_with_a_compaction_helper

from .vscode_e2e_helpers import Workbench, open_workbench, require_e2e_tools, running_code_server
from .vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e-trees"
MEDIA = ROOT / "vscode-extension" / "media"
LONG_TITLE = (
    "Investigate why mix phx.server no longer starts after the dependency upgrade and fix it"
)
TITLED = "marot-spotter-short"  # the real transcript that gets LONG_TITLE


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    base = tmp_path_factory.mktemp("vscode-e2e-trees")
    claude = claude_home_with_a_compaction_helper(base)
    real = claude / "projects" / "-real"
    real.mkdir()
    for f in sorted((REAL / "claude-code").glob("*.jsonl")):
        shutil.copy(f, real / f.name)
    with (real / f"{TITLED}.jsonl").open("a") as out:
        first = json.loads((real / f"{TITLED}.jsonl").read_text().splitlines()[1])
        out.write(
            json.dumps(
                {"type": "custom-title", "sessionId": first["sessionId"], "customTitle": LONG_TITLE}
            )
            + "\n"
        )
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": f"claude:{claude}",
        "dshQuery.index": ":memory:",
    }
    with running_code_server(base / "home", settings, ARTIFACTS) as server:
        with open_workbench(server.url, ARTIFACTS) as wb:
            wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
            yield wb


def _level(row) -> str | None:
    return row.get_attribute("aria-level")


def _expand(row) -> None:
    if row.get_attribute("aria-expanded") != "true":
        row.locator(".monaco-tl-twistie").click()


def _trace_header(wb: Workbench) -> str:
    return wb.pane("Trace").locator(".pane-header").inner_text()


def _rest(wb: Workbench) -> None:
    """The mouse away from every list (no hover card), nothing focused in a quick pick."""
    wb.page.keyboard.press("Escape")
    box = wb.page.locator(".part.editor").bounding_box()
    if box:
        wb.page.mouse.move(box["x"] + box["width"] - 40, box["y"] + box["height"] - 40)
    time.sleep(0.6)


def test_sub_agents_and_the_compaction_helper_sit_under_their_session(
    workbench: Workbench,
) -> None:
    wb = workbench
    session = wb.wait_row("Sessions", "File cleanup", timeout=120_000)
    wb.widen_sidebar(520)
    assert _level(session) == "1"
    top = wb.rows("Sessions").evaluate_all(
        "rows => rows.filter(r => r.getAttribute('aria-level') === '1').map(r => r.innerText)"
    )
    assert not any("Rename b.py" in t or "Compaction helper" in t for t in top), top
    _expand(session)
    sub = wb.wait_row("Sessions", "Rename b.py to c.py")
    helper = wb.wait_row("Sessions", "Compaction helper")
    assert _level(sub) == _level(helper) == "2"
    assert "sub-agent · claude-code" in sub.inner_text()
    assert "compaction helper · claude-code" in helper.inner_text()
    assert helper.locator(".codicon-fold").count() == 1
    # in the order a person reads a session: its events, its lineage, then what it spawned
    labels = wb.rows("Sessions").evaluate_all(
        "rows => rows.filter(r => r.getAttribute('aria-level') === '2')"
        ".map(r => r.querySelector('.label-name').innerText)"
    )
    assert labels == ["Events", "Lineage", "Rename b.py to c.py", "Compaction helper"], labels
    _rest(wb)
    path = wb.shot("sessions-nested")
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, MEDIA / "sessions-nested.png")


def test_a_long_title_is_cut_and_agent_date_and_state_stay_visible(workbench: Workbench) -> None:
    wb = workbench
    row = wb.wait_row("Sessions", LONG_TITLE[:30])
    name = row.locator(".label-name").inner_text()
    description = row.locator(".label-description").inner_text()
    assert name.endswith("…") and len(name) <= 32 and LONG_TITLE.startswith(name[:-1]), name
    day = r"(\d+ d ago|[A-Z][a-z][a-z] \d+|\d{4}-\d\d-\d\d)"
    assert re.fullmatch(f"claude-code · {day} · persisted", description), description
    # the whole description is on screen: it ends inside the row, not under a cut
    label_box = row.locator(".label-description").bounding_box()
    row_box = row.bounding_box()
    assert label_box and row_box
    assert label_box["x"] + label_box["width"] <= row_box["x"] + row_box["width"]
    hidden = row.locator(".monaco-icon-label-container").evaluate(
        "n => n.scrollWidth > n.clientWidth"
    )
    assert hidden is False


def test_events_show_their_class_as_a_coloured_icon_and_the_word(workbench: Workbench) -> None:
    wb = workbench
    wb.row("Sessions", "File cleanup").locator(".monaco-tl-contents").click()
    header = wb.pane("Events").locator(".pane-header")
    wb.wait_for(lambda: "claude-demo" in header.inner_text(), "the Events view of claude-demo")
    rows = {
        "current": ("#29 user/message", "circle-filled"),
        "shadowed": ("#16 user/message", "circle-slash"),
        "log-only": ("#28 compaction/start", "circle-outline"),
    }
    colours = {}
    for word, (text, icon) in rows.items():
        row = wb.wait_row("Events", text)  # read at once: the list is virtual, rows come and go
        assert row.locator(".label-description").inner_text().startswith(word)
        # the word is on screen, not cut off after a long summary
        box, row_box = row.locator(".label-description").bounding_box(), row.bounding_box()
        assert box and row_box and box["x"] + box["width"] <= row_box["x"] + row_box["width"]
        glyph = row.locator(f".codicon-{icon}")
        assert glyph.count() == 1, (word, row.inner_html())
        colours[word] = glyph.evaluate("n => n.style.color")
    assert all(colours.values()) and len(set(colours.values())) == 3, colours
    _rest(wb)
    wb.shot("events-classes")


def test_search_hits_show_titles_and_the_highlighted_match(workbench: Workbench) -> None:
    wb = workbench
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.wait_for(state="visible")
    box.fill("goodbye function")
    items = wb.quick_items()
    wb.wait_for(lambda: "Create a hello world function" in items.first.inner_text(), "the title")
    first = items.first
    assert "simonw-sample_session" not in first.locator(".label-name").first.inner_text()
    assert "claude-code · 2025-12-24 · #16 user/message" in first.inner_text()
    marked = first.locator(".highlight")  # only the snippet holds the phrase
    wb.wait_for(lambda: marked.count() > 0, "the match highlighted in the snippet")
    assert " ".join(marked.all_inner_texts()).lower() == "goodbye function"
    wb.shot("search-titles")
    wb.page.keyboard.press("Escape")


def test_the_trace_view_follows_the_selection_to_a_search_hit(workbench: Workbench) -> None:
    wb = workbench
    # an event of claude-demo selected: the Trace view shows its trace
    wb.row("Sessions", "File cleanup").locator(".monaco-tl-contents").click()
    wb.wait_row("Events", "#16 user/message").locator(".monaco-tl-contents").click()
    wb.wait_for(lambda: "event 16 of claude-demo" in _trace_header(wb), "the trace of #16")
    # a search hit in another session opened: the Trace view follows it
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.wait_for(state="visible")
    box.fill("goodbye function")
    items = wb.quick_items()
    wb.wait_for(lambda: "goodbye function" in items.first.inner_text().lower(), "the hit")
    wb.page.mouse.move(5, 5)
    items.first.click()
    wb.wait_for(lambda: "▶ target: seq 16" in wb.editor_text(), "the hit's event window")
    wb.wait_for(
        lambda: "event 16 of simonw-sample_session" in _trace_header(wb),
        "the Trace view on the hit (not still on claude-demo's #16)",
    )
    wb.wait_row("Trace", "#16 user/message")
    events_header = wb.pane("Events").locator(".pane-header").inner_text()
    assert "simonw-sample_session" in events_header
    wb.shot("trace-follows-hit")


def test_an_event_selected_in_the_sessions_view_is_traced(workbench: Workbench) -> None:
    wb = workbench
    session = wb.row("Sessions", "File cleanup")
    _expand(session)
    group = wb.wait_row("Sessions", "Events")
    _expand(group)
    wb.wait_row("Sessions", "#22 user/message").locator(".monaco-tl-contents").click()
    wb.wait_for(lambda: "event 22 of claude-demo" in _trace_header(wb), "the trace of #22")
    wb.wait_row("Trace", "Replaced by")
