"""The VS Code extension end to end in a real VS Code (editor.md, testing layer 3).

code-server (pinned, on the pinned Node 24 from the npm registry, installed by mk/vscode.mk into a
cache folder) gets the freshly built .vsix in a fresh --user-data-dir/--extensions-dir, and a
settings.json that points the extension at this repository's server: `dshQuery.interpreter` = this
Python, `dshQuery.persistence` = a JSONL root prepared here (persisted sessions: a parent with a
compaction and its sub-agent). The extension connects to the hub of that configuration (hub.md,
`dshQuery.hub` on by default), and this test is a producer on the same hub: the live session it
creates there is live for every window. Headless Debian Chromium, driven by Playwright (no browser
download), then checks what a person would:

1. the Session Query container shows the Sessions view with the prepared sessions (and the
   producer's live session next to the persisted ones), the sub-agent nested under its parent;
2. expanding a session shows its Events group with each event's surface status, and its
   sub-agent;
3. selecting a session fills the Events view, and the Trace view shows its lineage with the
   sub-agent;
4. clicking an event opens its read-only `dsh-session:` window document with the target marked;
5. Search Sessions… from the command palette finds a phrase, names each hit by its session's
   first message (these sessions have no title), pages with "Load more" (limit 1) and opens the
   hit's event window;
6. Mount Persistence… from the palette mounts a second root; the server's didChange refreshes the
   Sessions view by itself;
7. a second window on the same hub sees a session the producer creates, as the first does;
8. changing a server setting restarts the server: an interpreter that cannot start the server
   gives a notification that says why with "Show Output", and the Sessions view's welcome
   content; setting it back reconnects to the same hub (the live session is still there);
9. a hub killed with SIGKILL: the window reconnects (starting a new hub) and refreshes its views.

Screenshots go to artifacts/vscode-e2e/. code-server runs in its own process group and is stopped
through the PID this test started. With DSH_QUERY_E2E_UPDATE_SCREENSHOT=1 the README screenshot
(vscode-extension/media/screenshot.png) is refreshed from this run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_query_server.client import StdioClient
from dsh_query_server.hub.client import HubClient
from tests.editors.vscode.vscode_e2e_helpers import (
    Workbench,
    open_workbench,
    require_e2e_tools,
    running_code_server,
)
from tests.editors.vscode.vscode_helpers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "artifacts" / "vscode-e2e"
T0 = 1_764_460_800_000  # 2025-11-30T00:00:00Z

PARENT = "e2e-ledger-parent"
SUBAGENT = "e2e-ledger-subagent"
LATER = "e2e-mounted-later"
PARENT_LABEL = "Plan the quokka migration for the ledger service."
SUBAGENT_LABEL = "Survey the ledger schema before the quokka migration."
LATER_LABEL = "A session that only the second root holds."
LIVE = "e2e-live-from-a-producer"
LIVE_LABEL = "A live session a producer feeds through the hub."
SECOND = "e2e-made-while-two-windows-watch"
SECOND_LABEL = "A session both windows see as soon as it is made."
# The Sessions view cuts titles to 32 characters after a whole word (protocol.md §6): rows are
# found by the first 24, which every cut keeps.


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    require_e2e_tools()


# -- the corpus ------------------------------------------------------------------------------


def _user(seq: int, text: str, **envelope: Any) -> dict[str, Any]:
    return {
        "type": "user/message",
        "time": T0 + seq * 1000,
        "surfaceOp": envelope.pop("op", "append"),
        "data": {
            "id": f"u{seq}",
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
        },
        **envelope,
    }


def _assistant(seq: int, text: str, **envelope: Any) -> dict[str, Any]:
    return {
        "type": "assistant/message",
        "time": T0 + seq * 1000,
        "surfaceOp": envelope.pop("op", "append"),
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "id": f"a{seq}",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
            },
        },
        **envelope,
    }


def _turn(seq: int, kind: str, turn: int = 1) -> dict[str, Any]:
    data: dict[str, Any] = {"turn": turn}
    if kind == "turn/end":
        data["reason"] = {"kind": "completed"}
    return {"type": kind, "time": T0 + seq * 1000, "data": data}


def _persist(root: Path, sessions: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> None:
    """Writes sessions into a JSONL root through the server's own producer methods."""
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(root.parent / "state"),
        "XDG_CACHE_HOME": str(root.parent / "cache"),
    }
    with StdioClient(
        ["--persistence", f"jsonl:{root}"],
        initialization_options={"index": ":memory:", "checkpoint": {"mode": "manual"}},
        env=env,
    ) as client:
        for header, events in sessions:
            client.request("sessionStore/create", {"header": header})
            client.request("sessionStore/append", {"sessionId": header["id"], "events": events})
            client.request(
                "sessionStore/remove", {"sessionId": header["id"]}
            )  # flushes, then persisted only


@pytest.fixture(scope="module", autouse=True)
def clean_artifacts() -> None:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("vscode-e2e-corpus")
    first, second = base / "root-one", base / "root-two"
    _persist(
        first,
        [
            (
                {"version": 0, "id": PARENT, "createdAt": T0, "cwd": "/srv/ledger"},
                [
                    _turn(0, "turn/start"),
                    _user(1, PARENT_LABEL),
                    _assistant(2, "I will start a sub-agent to survey the ledger schema."),
                    _turn(3, "turn/end"),
                    # a compaction: #1 and #2 leave the surface, replaced by one summary
                    _user(
                        4,
                        "Summary: the quokka migration needs the ledger schema survey.",
                        op={"op": "replace", "start": 1, "end": 2},
                        sourceEventSeqs=[1, 2],
                    ),
                ],
            ),
            (
                {
                    "version": 0,
                    "id": SUBAGENT,
                    "createdAt": T0 + 60_000,
                    "cwd": "/srv/ledger",
                    "parentSession": PARENT,
                    "origin": "subagent",
                    "delegationDepth": 1,
                },
                [
                    _user(0, SUBAGENT_LABEL),
                    _assistant(1, "The ledger schema has 12 tables; quokka touches 3."),
                ],
            ),
        ],
    )
    _persist(
        second,
        [
            (
                {"version": 0, "id": LATER, "createdAt": T0 + 120_000},
                [_user(0, LATER_LABEL), _assistant(1, "Noted.")],
            )
        ],
    )
    return {"first": first, "second": second}


# -- code-server and the browser -------------------------------------------------------------


@pytest.fixture(scope="module")
def code_server(
    corpus: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    settings: dict[str, object] = {
        "dshQuery.interpreter": [sys.executable],
        "dshQuery.persistence": f"jsonl:{corpus['first']}",
        "dshQuery.index": ":memory:",
        "dshQuery.search.limit": 1,
        "dshQuery.readWindow.before": 2,
        "dshQuery.readWindow.after": 2,
    }
    home = tmp_path_factory.mktemp("vscode-e2e-home")
    with running_code_server(home, settings, ARTIFACTS) as server:
        # The options the extension derives from these settings (settings.ts readSettings).
        options = {
            "readWindowMax": 50,
            "persistence": f"jsonl:{corpus['first']}",
            "index": ":memory:",
        }
        producer = _producer(server.run_dir, options)
        try:
            producer.request(
                "sessionStore/create",
                {
                    "header": {
                        "version": 0,
                        "id": LIVE,
                        "createdAt": T0 + 90_000,
                        "cwd": "/home/ana/notes",
                    }
                },
            )
            producer.request(
                "sessionStore/append", {"sessionId": LIVE, "events": [_user(0, LIVE_LABEL)]}
            )
            yield {
                "url": server.url,
                "log": server.log,
                "home": server.home,
                "corpus": corpus,
                "workspace": server.workspace,
                "run_dir": server.run_dir,
                "options": options,
                "producer": producer,
            }
        finally:
            producer.close()


def _producer(run_dir: Path, options: dict[str, Any]) -> HubClient:
    """A producer on the hub the extension will use: started here through the CLI (the same
    `hub ensure` the extension runs), then fed over its socket."""
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(run_dir),
        "DSH_QUERY_HUB_OPTIONS": json.dumps(options),
    }
    ensured = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "hub", "ensure"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ensured.returncode == 0, ensured.stderr
    client = HubClient.connect(json.loads(ensured.stdout)["socket"])
    return client.initialize(options)


@pytest.fixture(scope="module")
def workbench(code_server: dict[str, Any]) -> Iterator[Workbench]:
    with open_workbench(code_server["url"], ARTIFACTS) as wb:
        yield wb


# -- the checks (in order: they walk through one session of use) ----------------------------


def test_sessions_view_lists_the_corpus(workbench: Workbench) -> None:
    wb = workbench
    wb.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
    parent = wb.wait_row("Sessions", PARENT_LABEL[:24], timeout=60_000)
    wb.widen_sidebar()
    wb.shot("sessions")
    labels = wb.labels("Sessions")
    # each row's accessible label carries the server's tooltip: the session id and its state
    assert any(f"id: {PARENT}" in label and "state: persisted" in label for label in labels), labels
    assert any(f"id: {LIVE}" in label and "state: live" in label for label in labels), (
        "the producer's live session is listed too"
    )
    # the sub-agent is not at the top: it sits under its parent
    assert not any(f"id: {SUBAGENT}" in label for label in labels), labels
    parent.locator(".monaco-tl-twistie").click()
    sub = wb.wait_row("Sessions", SUBAGENT_LABEL[:24])
    assert sub.get_attribute("aria-level") == "2" and "sub-agent" in sub.inner_text()
    assert f"id: {SUBAGENT}" in (sub.get_attribute("aria-label") or "")
    assert not wb.pane("Sessions").locator(".welcome-view-content").is_visible()


def test_expanding_a_session_shows_events_with_surface_status(workbench: Workbench) -> None:
    wb = workbench
    session = wb.row("Sessions", PARENT_LABEL[:24])
    if session.get_attribute("aria-expanded") != "true":
        session.locator(".monaco-tl-twistie").click()
    events_group = wb.wait_row("Sessions", "Events")
    events_group.locator(".monaco-tl-twistie").click()
    assert "log-only" in wb.wait_row("Sessions", "#0 turn/start").inner_text()
    assert "shadowed" in wb.wait_row("Sessions", "#1 user/message").inner_text()  # compacted away
    assert "current" in wb.wait_row("Sessions", "#4 user/message").inner_text()  # the summary
    wb.shot("session-expanded")


def test_selecting_a_session_fills_events_and_trace_with_the_sub_agent(
    workbench: Workbench,
) -> None:
    wb = workbench
    wb.row("Sessions", PARENT_LABEL[:24]).locator(".monaco-tl-contents").click()
    wb.wait_row("Events", "#4 user/message")
    assert PARENT in (wb.pane("Events").locator(".pane-header").inner_text())
    target = wb.wait_row("Trace", PARENT_LABEL[:24])
    child = wb.wait_row("Trace", SUBAGENT_LABEL[:24])
    wb.shot("trace-lineage")
    assert "target" in target.inner_text()
    assert "sub-agent" in child.inner_text()
    assert len(wb.labels("Events")) == 5


def test_clicking_an_event_opens_its_window_document(workbench: Workbench) -> None:
    wb = workbench
    wb.row("Events", "#1 user/message").locator(".monaco-tl-contents").click()
    wb.wait_for(lambda: f"{PARENT} event 1.jsonc" in wb.active_tab(), "the event window tab")
    wb.wait_for(lambda: "▶ target: seq 1 user/message" in wb.editor_text(), "the marked target")
    text = wb.editor_text()
    assert PARENT_LABEL in text
    # selecting the event switched Trace to its event trace: replaced by the summary (#4)
    assert "1" in wb.wait_row("Trace", "Replaced by").inner_text()
    wb.wait_row("Trace", "#4 user/message")
    assert "target" in wb.row("Trace", "#1 user/message").inner_text()
    wb.shot("event-window")


def test_group_sessions_by_workspace_and_by_agent(workbench: Workbench) -> None:
    """Group Sessions By… (the server's group nodes): Workspace puts the ledger sessions under
    their cwd, Agent puts every session of this corpus under dsh (persisted dsh headers carry no
    `source`); None brings the plain list back."""
    wb = workbench
    header = wb.pane("Sessions").locator(".pane-header")

    def group_by(choice: str) -> None:
        wb.palette("Session Query: Group Sessions By")
        wb.page.locator(".quick-input-list .monaco-list-row", has_text=choice).first.click()

    def top_rows() -> list[str]:
        # one snapshot of the list (rows come and go while it re-renders)
        return wb.rows("Sessions").evaluate_all(
            "rows => rows.filter(r => r.getAttribute('aria-level') === '1').map(r => r.innerText)"
        )

    group_by("Workspace")
    wb.wait_for(lambda: "by workspace" in header.inner_text(), "the view described as grouped")
    ledger = wb.wait_row("Sessions", "/srv")
    wb.wait_for(
        lambda: (
            "ledger" in ledger.inner_text() and "1 session · 1 sub-agent" in ledger.inner_text()
        ),
        "the ledger group",
    )
    ledger.locator(".monaco-tl-twistie").click()
    parent = wb.wait_row("Sessions", PARENT_LABEL[:24])
    assert parent.get_attribute("aria-level") == "2"
    parent.locator(".monaco-tl-twistie").click()
    assert wb.wait_row("Sessions", SUBAGENT_LABEL[:24]).get_attribute("aria-level") == "3"
    wb.page.keyboard.press("Escape")
    time.sleep(0.5)
    path = wb.shot("sessions-by-workspace")
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, ROOT / "vscode-extension" / "media" / "sessions-by-workspace.png")

    group_by("Agent")
    wb.wait_for(lambda: "by agent" in header.inner_text(), "the view described as grouped by agent")
    wb.wait_for(lambda: len(top_rows()) == 1 and top_rows()[0].startswith("dsh"), "one dsh group")
    wb.shot("sessions-by-agent")

    group_by("None")
    wb.wait_for(lambda: "by " not in header.inner_text(), "the plain list back")
    wb.wait_row("Sessions", PARENT_LABEL[:24])
    assert wb.row("Sessions", PARENT_LABEL[:24]).get_attribute("aria-level") == "1"
    # no hover tooltip left over a list (it would cover the next test's quick pick): the mouse
    # rests on the side bar's title, away from the list and from where quick picks open
    box = wb.page.locator(".part.sidebar .composite.title").first.bounding_box()
    if box:
        wb.page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
    wb.page.keyboard.press("Escape")
    time.sleep(0.5)


def test_palette_search_finds_a_phrase_pages_and_opens_the_hit(workbench: Workbench) -> None:
    wb = workbench
    wb.palette("Session Query: Search Sessions")
    box = wb.quick_input()
    box.wait_for(state="visible")
    box.fill("quokka migration")
    items = wb.quick_items()
    wb.wait_for(
        lambda: any("Load more" in t for t in items.all_inner_texts()),
        "a first page with Load more",
    )
    first_page = [t for t in items.all_inner_texts() if "Load more" not in t]
    assert len(first_page) == 1, first_page  # dshQuery.search.limit is 1
    wb.shot("search-first-page")
    wb.page.locator(".quick-input-list .monaco-list-row", has_text="Load more").first.click()
    wb.wait_for(
        lambda: len([t for t in items.all_inner_texts() if "Load more" not in t]) >= 2,
        "the second page",
    )
    texts = items.all_inner_texts()
    # hits are named by what their session was about (its first message), never by its id
    assert any(PARENT_LABEL[:40] in t for t in texts), texts
    assert any(SUBAGENT_LABEL[:40] in t for t in texts), texts
    assert not any(PARENT in t or SUBAGENT in t for t in texts), texts
    assert all("quokka" in t.lower() for t in texts if "Load more" not in t), (
        texts
    )  # snippets shown
    wb.shot("search-loaded-more")
    # the mouse still rests where "Load more" was: its hover card can cover the hit (flaky click)
    wb.page.mouse.move(5, 5)
    wb.page.locator(
        ".quick-input-list .monaco-list-row", has_text=SUBAGENT_LABEL[:40]
    ).first.click()
    wb.wait_for(lambda: f"{SUBAGENT} event 0.jsonc" in wb.active_tab(), "the hit's event window")
    wb.wait_for(lambda: "▶ target: seq 0 user/message" in wb.editor_text(), "the hit marked")
    assert SUBAGENT_LABEL in wb.editor_text()
    wb.shot("search-hit-opened")


def test_mount_persistence_refreshes_the_sessions_view(
    workbench: Workbench, code_server: dict[str, Any]
) -> None:
    wb = workbench
    second = code_server["corpus"]["second"]
    wb.palette("Session Query: Mount Persistence")
    wb.page.locator(".quick-input-list .monaco-list-row", has_text="Enter a URI").first.click()
    box = wb.quick_input()
    wb.wait_for(lambda: box.input_value().startswith("jsonl:"), "the current URI prefilled")
    box.fill(f"jsonl:{second}")
    wb.page.keyboard.press("Enter")
    # no Refresh: the server's sessionQuery/didChange {corpus} refreshes the view
    wb.wait_row("Sessions", LATER_LABEL[:24])
    wb.wait_for(
        lambda: not wb.row("Sessions", PARENT_LABEL[:24]).is_visible(),
        "the first root's sessions gone",
    )
    assert any("state: live" in label for label in wb.labels("Sessions"))
    toast = wb.page.locator(".notifications-toasts").inner_text()
    assert "mounted" in toast, toast
    wb.shot("mounted-second-root")


def test_readme_screenshot(workbench: Workbench, code_server: dict[str, Any]) -> None:
    """A tidy picture for the README: the first root mounted again, a session with a compaction,
    one of its shadowed events open, and that event's trace (replaced by the summary)."""
    wb = workbench
    wb.palette("Session Query: Mount Persistence")
    wb.page.locator(".quick-input-list .monaco-list-row", has_text="Enter a URI").first.click()
    box = wb.quick_input()
    wb.wait_for(lambda: box.input_value().startswith("jsonl:"), "the current URI prefilled")
    box.fill(f"jsonl:{code_server['corpus']['first']}")
    wb.page.keyboard.press("Enter")
    wb.wait_row("Sessions", PARENT_LABEL[:24])
    wb.palette("Notifications: Clear All Notifications")
    wb.palette("View: Close All Editors")
    wb.row("Sessions", PARENT_LABEL[:24]).locator(".monaco-tl-contents").click()
    wb.wait_row("Events", "#2 assistant/message").locator(".monaco-tl-contents").click()
    wb.wait_for(lambda: "▶ target: seq 2" in wb.editor_text(), "the event window")
    wb.wait_row("Trace", "Replaced by")
    wb.page.keyboard.press("Escape")
    editor = wb.page.locator(".part.editor").bounding_box()
    if editor:
        wb.page.mouse.move(editor["x"] + editor["width"] - 40, editor["y"] + editor["height"] - 40)
    time.sleep(0.8)
    path = wb.shot("readme")
    if os.environ.get("DSH_QUERY_E2E_UPDATE_SCREENSHOT"):
        shutil.copy(path, ROOT / "vscode-extension" / "media" / "screenshot.png")


def test_a_second_window_sees_a_session_the_producer_creates(
    workbench: Workbench, code_server: dict[str, Any]
) -> None:
    """hub.md §2: one service for every window; didChange reaches each of them."""
    wb = workbench
    wb.palette("View: Close All Editors")
    second = wb.new_window()
    try:
        second.page.locator('.activitybar [aria-label^="Session Query"]').first.click()
        second.wait_row("Sessions", PARENT_LABEL[:24], timeout=90_000)
        second.wait_row(
            "Sessions", LIVE_LABEL[:24]
        )  # the producer's session, made before it opened
        producer: HubClient = code_server["producer"]
        header = {"version": 0, "id": SECOND, "createdAt": T0 + 100_000, "cwd": "/home/ana/notes"}
        producer.request("sessionStore/create", {"header": header})
        producer.request(
            "sessionStore/append", {"sessionId": SECOND, "events": [_user(0, SECOND_LABEL)]}
        )
        # no Refresh in either window: didChange from the hub refreshes both
        second.wait_row("Sessions", SECOND_LABEL[:24])
        wb.wait_row("Sessions", SECOND_LABEL[:24])
        second.shot("second-window")
        wb.shot("first-window-sees-it-too")
    finally:
        second.page.close()


def test_a_server_that_cannot_start_says_why_and_recovers(
    workbench: Workbench, code_server: dict[str, Any]
) -> None:
    wb = workbench
    folder: Path = code_server["workspace"] / ".vscode"
    folder.mkdir(exist_ok=True)
    path = folder / "settings.json"
    broken = {
        "dshQuery.interpreter": [
            sys.executable,
            "-c",
            "import sys; sys.stderr.write('no dsh-query-server here\\n'); sys.exit(3)",
        ]
    }
    wb.palette("Notifications: Clear All Notifications")
    # a workspace setting overrides the user's; it is a server setting, so the server restarts
    path.write_text(json.dumps(broken, indent=2))
    toasts = wb.page.locator(".notifications-toasts")
    wb.wait_for(
        lambda: "failed to start" in toasts.inner_text(),
        "the start failure notification",
        timeout=45,
    )
    text = toasts.inner_text()
    assert "Session Query server failed to start: no dsh-query-server here" in text, text
    assert "Show Output" in text
    welcome = wb.pane("Sessions").locator(".welcome-view-content")
    wb.wait_for(
        lambda: welcome.is_visible() and "not running" in welcome.inner_text(),
        "the not-running welcome",
    )
    wb.shot("server-failed")
    toasts.locator("a.monaco-button, .monaco-button", has_text="Show Output").first.click()
    output = wb.page.locator(".part.panel")
    wb.wait_for(
        lambda: (
            output.is_visible()
            and "[error] no dsh-query-server here" in output.inner_text().replace("\u00a0", " ")
        ),
        "the output channel",
    )
    wb.shot("server-output")
    # back to a working interpreter: the window connects to the same hub again, whose live
    # session outlived the window's restart
    path.write_text("{}")
    wb.wait_row("Sessions", PARENT_LABEL[:24], timeout=45_000)
    wb.wait_row("Sessions", LIVE_LABEL[:24])
    assert not welcome.is_visible()


def test_a_killed_hub_is_replaced_and_the_views_refresh(
    workbench: Workbench, code_server: dict[str, Any]
) -> None:
    wb = workbench
    infos = list((code_server["run_dir"] / "dsh-query").glob("hub-*.json"))
    assert len(infos) == 1, infos
    killed = json.loads(infos[0].read_text())["pid"]
    wb.palette("Notifications: Clear All Notifications")
    os.kill(killed, signal.SIGKILL)
    # the window reconnects (its `hub ensure` starts a new hub) and lists the sessions again; the
    # producer's session is persisted only now (the killed hub had checkpointed it into the root,
    # its live copy went with the hub, as with a killed `serve`)
    wb.wait_for(
        lambda: any(
            json.loads(p.read_text()).get("pid") not in (None, killed)
            for p in (code_server["run_dir"] / "dsh-query").glob("hub-*.json")
        ),
        "a new hub",
        timeout=90,
    )
    wb.wait_row("Sessions", PARENT_LABEL[:24], timeout=90_000)
    wb.wait_for(
        lambda: any(
            f"id: {LIVE}" in label and "state: persisted" in label
            for label in wb.labels("Sessions")
        ),
        "the producer's session, persisted only",
    )
    assert "failed" not in wb.page.locator(".notifications-toasts").inner_text()
    wb.shot("reconnected")
