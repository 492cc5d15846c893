"""Work-done progress over the wire (protocol.md §8, pytest-lsp): a token the request sent or one
the server asks the client to create; monotonic percentages, exactly one begin and one end per
token, and an end after a cancellation and after a backend failure.

The servers run with ``DSH_QUERY_PROGRESS_DELAY_MS=0``: progress opens at once and every change
is reported, so each test sees the whole sequence without waiting for the 0.5 s delay.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import sys
import tempfile
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.builders import TEST_ENV, TEST_SERVER, U, hdr, write_transcript
from tests.lsp_client import config

pytestmark = pytest.mark.wire

ENV = {**TEST_ENV, "DSH_QUERY_PROGRESS_DELAY_MS": "0"}
SESSIONS = 40


def _init(creates: bool) -> types.InitializeParams:
    window = types.WindowClientCapabilities(work_done_progress=True) if creates else None
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(window=window),
        # No warm-up: the mount's background reconcile would index some transcripts before the
        # search does, and the search's own messages would then depend on timing.
        initialization_options={"index": ":memory:", "search": {"warmUp": False}},
    )


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV, server=TEST_SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_init(creates=True))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def _home(root: pathlib.Path) -> pathlib.Path:
    for n in range(SESSIONS):
        write_transcript(root, hdr(f"s{n:03d}"), [U(0, f"needle number {n}")])
    return root


def check_sequence(reports: list[Any]) -> list[int]:
    """One begin first, one end last, reports between; the percentages never go down."""
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin", kinds
    assert kinds[-1] == "WorkDoneProgressEnd", kinds
    assert kinds.count("WorkDoneProgressBegin") == 1, kinds
    assert kinds.count("WorkDoneProgressEnd") == 1, kinds
    percentages = [r.percentage for r in reports[:-1] if r.percentage is not None]
    assert percentages == sorted(percentages), percentages
    assert all(0 <= p <= 100 for p in percentages)
    return percentages


def _all(client: LanguageClient) -> list[list[Any]]:
    return list(client.progress_reports.values())


async def _search(client: LanguageClient, params: dict[str, Any]) -> Any:
    return await client.protocol.send_request_async("sessionQuery/searchSessions", params)


async def _wait_for(predicate, seconds: float = 20) -> None:
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


async def test_index_build_reports_through_a_created_token(client, tmp_path):
    root = _home(tmp_path / "home")
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"jsonl:{root}"})
    page = await _search(client, {"query": "needle", "limit": 100})
    assert len(page["items"]) == SESSIONS
    await _wait_for(lambda: all(r and r[-1].kind == "end" for r in _all(client)))
    searches = [
        reports
        for reports in client.progress_reports.values()
        if reports and reports[0].title == "dsh-query searchSessions"
    ]
    assert len(searches) == 1  # with no delay the mount shows progress too, under its own token
    (reports,) = searches
    await _wait_for(lambda: reports[-1].kind == "end")
    for each in client.progress_reports.values():
        check_sequence(each)
    percentages = check_sequence(reports)
    assert percentages and percentages[-1] == 100
    messages = [r.message for r in reports if r.message]
    # Which counts show depends on when the client's token creation returns (load): any will do.
    assert any(re.fullmatch(rf"indexing \d+ of {SESSIONS:,} transcripts", m) for m in messages)
    assert reports[0].title == "dsh-query searchSessions"
    assert reports[-1].message == "done"


async def test_the_requests_own_token_is_used_and_nothing_is_created(client, tmp_path):
    root = _home(tmp_path / "home")
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"jsonl:{root}"})
    client.progress_reports["mine"] = []  # as the client's own create would
    await _search(client, {"query": "needle", "workDoneToken": "mine"})
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["mine"]))
    # a token the server created (the mount's) gets its begin once the client has answered
    await _wait_for(lambda: all(r and r[-1].kind == "end" for r in _all(client)))
    titles = {r[0].title for t, r in client.progress_reports.items() if t != "mine"}
    assert titles == {"dsh-query mount"}  # created for the mount; the search used its own
    check_sequence(client.progress_reports["mine"])


async def test_cancelled_search_ends_its_progress(client, tmp_path):
    await client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": f"test:hang-on:inspect:{tmp_path}"}
    )
    task = asyncio.ensure_future(_search(client, {"query": "needle", "workDoneToken": "c1"}))
    client.progress_reports["c1"] = []
    await _wait_for(lambda: (tmp_path / "inspect.started").exists())
    (request_id,) = client.protocol._request_futures  # the search, the one request in flight
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=request_id))
    with pytest.raises(JsonRpcException) as info:
        await task
    assert info.value.code == -32800
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["c1"]))
    reports = client.progress_reports["c1"]
    check_sequence(reports)
    assert reports[-1].message == "cancelled"


async def test_work_done_cancel_cancels_the_request(client, tmp_path):
    await client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": f"test:hang-on:inspect:{tmp_path}"}
    )
    task = asyncio.ensure_future(_search(client, {"query": "needle"}))
    await _wait_for(lambda: (tmp_path / "inspect.started").exists())
    await _wait_for(lambda: any(r and r[0].title.endswith("searchSessions") for r in _all(client)))
    (token,) = [
        t for t, r in client.progress_reports.items() if r and r[0].title.endswith("searchSessions")
    ]
    assert client.progress_reports[token][0].cancellable is True
    client.protocol.notify(
        types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
    )
    with pytest.raises(JsonRpcException) as info:
        await task
    assert info.value.code == -32800
    await _wait_for(lambda: client.progress_reports[token][-1].kind == "end")
    check_sequence(client.progress_reports[token])
    assert client.progress_reports[token][-1].message == "cancelled"


async def test_backend_failure_ends_its_progress(client):
    await client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": "test:raise:inspect:os"}
    )
    client.progress_reports[7] = []
    with pytest.raises(JsonRpcException) as info:
        await _search(client, {"query": "needle", "workDoneToken": 7})
    assert (info.value.data or {}).get("code") == "SESSION_QUERY_PERSISTENCE_FAILED"
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports[7]))
    reports = client.progress_reports[7]
    check_sequence(reports)
    assert reports[-1].message.startswith("failed: ")


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV, server=TEST_SERVER))
async def plain_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_init(creates=False))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_no_progress_for_a_client_that_cannot_show_it(plain_client, tmp_path):
    root = _home(tmp_path / "home")
    await plain_client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": f"jsonl:{root}"}
    )
    await _search(plain_client, {"query": "needle"})
    assert plain_client.progress_reports == {}


# -- workspace/executeCommand: the same progress as the request the command runs ---------------


async def _command(client: LanguageClient, command: str, arg: Any, token: Any = None) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=[arg], work_done_token=token)
    return await client.workspace_execute_command_async(params)


async def test_a_command_reports_through_its_own_work_done_token(client, tmp_path):
    root = _home(tmp_path / "home")
    client.progress_reports["cmd"] = []  # as the client's own create would
    await _command(client, "dshQuery.server.mount", {"uri": f"jsonl:{root}"}, "cmd")
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["cmd"]))
    reports = client.progress_reports["cmd"]
    check_sequence(reports)
    assert reports[0].title == "dsh-query mount"
    assert reports[-1].message == "done"
    assert list(client.progress_reports) == ["cmd"]  # nothing created beside it


async def test_a_command_without_a_token_gets_a_created_one(client, tmp_path):
    root = _home(tmp_path / "home")
    await _command(client, "dshQuery.server.mount", {"uri": f"jsonl:{root}"})
    await _wait_for(
        lambda: bool(_all(client)) and all(r and r[-1].kind == "end" for r in _all(client))
    )
    (reports,) = _all(client)
    check_sequence(reports)
    assert reports[0].title == "dsh-query mount"
    assert reports[-1].message == "done"


async def test_a_failing_command_ends_its_progress(client):
    client.progress_reports["bad"] = []
    with pytest.raises(JsonRpcException) as info:
        await _command(client, "dshQuery.server.mount", {"uri": "nosuchscheme:x"}, "bad")
    assert (info.value.data or {}).get("code") == "SESSION_QUERY_INVALID_CONFIG"
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["bad"]))
    reports = client.progress_reports["bad"]
    check_sequence(reports)
    assert reports[-1].message.startswith("failed: ")


async def test_a_refused_commands_token_is_not_kept_for_a_later_request_of_its_id(client, tmp_path):
    """A command pygls refuses (unknown name) never runs, so nothing takes its workDoneToken
    back: it must not be kept and handed to the next command that reuses the id (JSON-RPC lets
    an id be reused once its request is answered)."""
    root = _home(tmp_path / "home")
    client.progress_reports["stale"] = []
    refused = types.ExecuteCommandParams(command="dshQuery.noSuchCommand", work_done_token="stale")
    with pytest.raises(JsonRpcException):
        await asyncio.wrap_future(
            client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, refused, msg_id="reused")
        )
    mount = types.ExecuteCommandParams(
        command="dshQuery.server.mount", arguments=[{"uri": f"jsonl:{root}"}]
    )
    await asyncio.wrap_future(
        client.protocol.send_request(types.WORKSPACE_EXECUTE_COMMAND, mount, msg_id="reused")
    )
    await _wait_for(
        lambda: any(
            r and r[-1].kind == "end" for t, r in client.progress_reports.items() if t != "stale"
        )
    )
    assert client.progress_reports["stale"] == []  # the mount showed under a token of its own


async def test_no_command_progress_for_a_client_that_cannot_show_it(plain_client, tmp_path):
    root = _home(tmp_path / "home")
    await _command(plain_client, "dshQuery.server.mount", {"uri": f"jsonl:{root}"})
    assert plain_client.progress_reports == {}


async def test_an_export_counts_its_sessions(client, tmp_path):
    from tests.mcp_helpers import CORPUS, write_corpus

    write_corpus(f"jsonl:{tmp_path / 'ex'}?compression=none")
    await client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": f"jsonl:{tmp_path / 'ex'}"}
    )
    client.progress_reports["ex"] = []
    params = {
        "sessionId": "s-root",
        "outputPath": str(tmp_path / "s.zip"),
        "includeDescendants": True,
        "workDoneToken": "ex",
    }
    result = await client.protocol.send_request_async("sessionQuery/exportSession", params)
    total = len(result["entries"])
    assert total > 1 and total <= len(CORPUS)
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["ex"]))
    reports = client.progress_reports["ex"]
    assert check_sequence(reports)[-1] == 100
    assert reports[0].title == "dsh-query exportSession"
    messages = [r.message for r in reports if r.message]
    assert [m for m in messages if m.startswith("exported ")] == [
        f"exported {n} of {total} sessions" for n in range(1, total + 1)
    ]
    assert messages[-2:] == ["writing the archive", "done"]


# -- the index warm-up (semantics.md §6.5 [ours]): no request, shown to every client that can ----

WARM_SERVER = [sys.executable, "-m", "tests.harness_warm_server"]
# The test backend of each warm-up server (``gate:<dir>``): every read writes
# ``<dir>/<op>.started`` and blocks until ``<dir>/release`` exists, so the warm-up is still
# running whatever the client does meanwhile. One directory per fixture.
WARM_DIRS = {name: pathlib.Path(tempfile.mkdtemp(prefix=f"warm-{name}-")) for name in ("a", "b")}


def _warm_config(name: str) -> Any:
    env = {**ENV, "DSH_TEST_WARM_MOUNT": f"test:gate:{WARM_DIRS[name]}"}
    return config(env=env, server=WARM_SERVER)


def _warm_init(creates: bool) -> types.InitializeParams:
    window = types.WindowClientCapabilities(work_done_progress=creates)
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(window=window),
        # manual: a checkpoint stops the warm-up (it waits for the index), not wanted here
        initialization_options={"index": ":memory:", "checkpoint": {"mode": "manual"}},
    )


def _started(name: str) -> bool:
    return any(p.name.endswith(".started") for p in WARM_DIRS[name].iterdir())


def _release(name: str) -> None:
    (WARM_DIRS[name] / "release").touch()


def _warm_ups(client: LanguageClient) -> dict[Any, list[Any]]:
    every: dict[Any, list[Any]] = dict(client.progress_reports)
    return {t: r for t, r in every.items() if r and r[0].title == "dsh-query warmUp"}


@pytest_lsp.fixture(config=_warm_config("a"))
async def warm_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_warm_init(creates=True))
    yield
    _release("a")
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_the_warm_up_is_shown_and_stops_when_its_token_is_cancelled(warm_client):
    """The client is shown the warm-up under a token the server created after initialized;
    cancelling that token stops the warm-up, which still ends its progress."""
    await _wait_for(lambda: bool(_warm_ups(warm_client)) and _started("a"))
    ((token, reports),) = _warm_ups(warm_client).items()
    assert reports[0].cancellable is True
    warm_client.protocol.notify(
        types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
    )
    # answered after the cancel was handled (messages are handled in order)
    await warm_client.protocol.send_request_async("sessionPersistence/status", {})
    _release("a")
    await _wait_for(lambda: reports[-1].kind == "end")
    check_sequence(reports)
    assert reports[-1].message == "stopped"
    assert list(warm_client.progress_reports) == [token]


@pytest_lsp.fixture(config=_warm_config("b"))
async def warm_plain_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_warm_init(creates=False))
    yield
    _release("b")
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_the_warm_up_is_not_shown_to_a_client_that_cannot_create_tokens(warm_plain_client):
    await _wait_for(lambda: _started("b"))
    assert warm_plain_client.progress_reports == {}


# -- long reads: bytes read of the log's size (protocol.md §8) -----------------------------------

CLAUDE_ID = "55604662-cf2a-4331-851a-ec234028f8ca"


def _big_claude_home(root: pathlib.Path, megabytes: int) -> pathlib.Path:
    """A real Claude Code transcript followed by ``megabytes`` one-MB records of a kind the
    importer keeps as log-only events, so that its read takes several MiB."""
    from tests.import_helpers import REAL

    project = root / "projects" / "-w"
    project.mkdir(parents=True)
    real = (REAL / "claude-code" / "marot-spotter-short.jsonl").read_bytes()
    pad = [
        json.dumps(
            {
                "type": "file-history-snapshot",
                "messageId": f"pad-{n}",
                "snapshot": {"pad": "x" * 1_000_000},
                "isSnapshotUpdate": True,
            }
        ).encode()
        + b"\n"
        for n in range(megabytes)
    ]
    (project / f"{CLAUDE_ID}.jsonl").write_bytes(real + b"".join(pad))
    return root


async def test_a_long_read_reports_its_bytes_with_a_rising_percentage(client, tmp_path):
    root = _big_claude_home(tmp_path / "claude", 6)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{root}"})
    size = (root / "projects" / "-w" / f"{CLAUDE_ID}.jsonl").stat().st_size
    client.progress_reports["read"] = []
    params = {"sessionId": CLAUDE_ID, "workDoneToken": "read"}
    await client.protocol.send_request_async("sessionQuery/readSession", params)
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["read"]))
    reports = client.progress_reports["read"]
    percentages = check_sequence(reports)
    assert reports[0].title == "dsh-query readSession"
    assert reports[-1].message == "done"
    reading = [r.message for r in reports if r.message and r.message.startswith("reading ")]
    assert len(reading) >= 3, reports  # a report a MiB (at most ten a second, delay 0: each)
    assert all(m.endswith(f" of {size / 1e6:.1f} MB") for m in reading), reading
    assert len(set(percentages)) >= 3 and max(percentages) < 100, percentages


async def test_a_search_of_the_same_log_reports_transcripts_not_bytes(client, tmp_path):
    """The index build reads the log too, under the search's token: its percentage is of
    transcripts indexed, never of one log's bytes (which would pin it at 100 early)."""
    root = _big_claude_home(tmp_path / "claude", 3)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{root}"})
    client.progress_reports["find"] = []
    await _search(client, {"query": "anything", "workDoneToken": "find"})
    await _wait_for(lambda: any(r.kind == "end" for r in client.progress_reports["find"]))
    reports = client.progress_reports["find"]
    check_sequence(reports)
    assert not [r for r in reports if (r.message or "").startswith("reading ")], reports
