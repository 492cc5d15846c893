"""Progress of one long read over the wire (protocol.md §8, pytest-lsp), for the backends whose
reads test_progress_wire.py does not cover: a Zstandard-compressed Codex rollout and the dsh
``jsonl:`` root (stored bytes, ``reading k of n MB``, also for ``readTitle``'s one log), our
``sqlite:`` and ``postgres:`` stores (``reading k of n events``) and OpenCode, database and legacy
files (``reading k of n records``).

Each read is made twice: under the request's own token by a client that shows progress, and by
a client that shows none (so no meter runs); the answers must be the same bytes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pathlib
import re
from typing import Any

import pytest
import pytest_lsp
import zstandard
from pytest_lsp import LanguageClient

from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.postgres import open_postgres
from dsh_query_server.persistence.sqlite import SqliteBackend
from tests.builders import TEST_SERVER, U, hdr, write_transcript
from tests.import_helpers import REAL
from tests.lsp_client import config
from tests.persistence.opencode.opencode_helpers import write_db, write_legacy
from tests.server.test_progress_wire import ENV, _init, _wait_for, check_sequence

pytestmark = pytest.mark.wire


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV, server=TEST_SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_init(creates=True))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV, server=TEST_SERVER))
async def plain(lsp_client: LanguageClient):
    """A client that neither sends tokens nor lets the server create one: nothing is metered."""
    await lsp_client.initialize_session(_init(creates=False))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def _noise(size: int) -> str:
    """Text that does not compress, so a Zstandard file is as long as its plaintext's MBs say."""
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()


async def _mount(uri: str, *clients: LanguageClient) -> None:
    for each in clients:
        await each.protocol.send_request_async("sessionPersistence/mount", {"uri": uri})


async def _metered(
    client: LanguageClient, plain: LanguageClient, method: str, params: dict[str, Any]
) -> list[str]:
    """The ``reading …`` messages of one request under its own token, after checking the
    sequence (one begin, one end, rising percentages, ``done``) and that a client without
    progress gets the very same answer."""
    token = f"read-{len(client.progress_reports)}"
    client.progress_reports[token] = []
    shown = await client.protocol.send_request_async(method, {**params, "workDoneToken": token})
    unshown = await plain.protocol.send_request_async(method, params)
    assert json.dumps(shown) == json.dumps(unshown)
    assert plain.progress_reports == {}
    reports: list[Any] = client.progress_reports[token]
    await _wait_for(lambda: any(r.kind == "end" for r in reports))
    percentages = check_sequence(reports)
    assert reports[0].title == f"dsh-query {method.split('/')[1]}"
    assert reports[-1].message == "done"
    assert len(set(percentages)) >= 3, reports
    return [r.message for r in reports if r.message and r.message.startswith("reading ")]


# -- a Zstandard Codex rollout: compressed bytes consumed of the stored size ---------------------

CODEX_ID = "019b64e5-57fa-7463-b644-fba7e456f905"


def _zstd_codex_home(root: pathlib.Path, megabytes: int) -> pathlib.Path:
    """A real Codex rollout followed by ``megabytes`` one-MB events of a kind the importer keeps
    as log-only events, stored as ``.jsonl.zst``."""
    day = root / "sessions" / "2025" / "12" / "28"
    day.mkdir(parents=True)
    pad = [
        json.dumps(
            {
                "timestamp": "2025-12-28T12:30:00.000Z",
                "type": "event_msg",
                "payload": {"type": "pad", "text": _noise(1_000_000)},
            }
        ).encode()
        + b"\n"
        for _ in range(megabytes)
    ]
    plaintext = (REAL / "codex" / "simonw-sample_codex_session.jsonl").read_bytes() + b"".join(pad)
    path = day / f"rollout-2025-12-28T12-18-30-{CODEX_ID}.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(plaintext))
    return path


async def test_a_zstandard_rollout_reports_its_compressed_bytes(client, plain, tmp_path):
    path = _zstd_codex_home(tmp_path / "codex", 6)
    await _mount(f"codex:{tmp_path / 'codex'}", client, plain)
    reading = await _metered(client, plain, "sessionQuery/readSession", {"sessionId": CODEX_ID})
    size = path.stat().st_size
    assert len(reading) >= 3, reading
    assert all(m.endswith(f" of {size / 1e6:.1f} MB") for m in reading), reading
    done = [float(m.split()[1]) for m in reading]
    assert done == sorted(done) and done[-1] <= size / 1e6


# -- the dsh jsonl root: stored bytes decoded, raw and Zstandard ---------------------------------


def _big_events(count: int) -> list[Event]:
    return [U(seq, _noise(1_000_000)) for seq in range(count)]


async def test_a_raw_dsh_transcript_reports_its_bytes_in_both_reads(client, plain, tmp_path):
    path = write_transcript(tmp_path / "root", hdr("big"), [e.to_value() for e in _big_events(6)])
    await _mount(f"jsonl:{tmp_path / 'root'}", client, plain)
    size = path.stat().st_size
    for method, params in (
        ("sessionQuery/readSession", {"sessionId": "big"}),  # inspect
        ("sessionQuery/readEvent", {"sessionId": "big", "seq": 5}),  # a window: its verification
    ):
        reading = await _metered(client, plain, method, params)
        assert len(reading) >= 3, reading
        assert all(m.endswith(f" of {size / 1e6:.1f} MB") for m in reading), reading


@pytest.mark.parametrize(
    "method,params,stages",
    [
        ("readSession", {}, ["folding 6 events"]),  # the replay check folds
        ("listEvents", {}, ["folding 6 events"]),
        ("readTimeline", {}, ["folding 6 events", "charting 0 of 6 events"]),
        ("filterEvents", {"filters": []}, ["folding 6 events", "filtering 6 events"]),
    ],
)
async def test_the_read_gives_way_to_what_follows_it(
    client, plain, tmp_path, method, params, stages
):
    """Once the log is read the request folds it, and some go on to chart or filter it: the
    progress says each, instead of staying on ``reading 6 of 6 MB`` until the end."""
    write_transcript(tmp_path / "root", hdr("big"), [e.to_value() for e in _big_events(6)])
    await _mount(f"jsonl:{tmp_path / 'root'}", client, plain)
    reading = await _metered(
        client, plain, f"sessionQuery/{method}", {"sessionId": "big", **params}
    )
    assert len(reading) >= 3, reading
    reports = list(client.progress_reports.values())[-1]  # the request's own token
    messages = [r.message for r in reports]
    assert messages[-len(stages) - 1 :] == [*stages, "done"], messages
    assert all(messages.count(stage) == 1 for stage in stages), messages


async def test_a_zstandard_dsh_transcript_reports_its_stored_bytes(client, plain, tmp_path):
    root = tmp_path / "root"
    backend = JsonlBackend(str(root), compression="zstd")
    backend.create(Header.from_value(hdr("big", 1, cwd="/p")))
    for event in _big_events(8):  # a frame each
        backend.append("big", [event])
    (path,) = root.rglob("session.jsonl.zstd")
    await _mount(f"jsonl:{root}", client, plain)
    reading = await _metered(client, plain, "sessionQuery/readSession", {"sessionId": "big"})
    size = path.stat().st_size
    assert len(reading) >= 3, reading
    assert all(m.endswith(f" of {size / 1e6:.1f} MB") for m in reading), reading


async def test_a_title_read_of_one_log_reports_its_bytes(client, plain, tmp_path):
    """``readTitle`` reads one log (its verification, the first time at a revision): its bytes
    are the count, as a read of one session shows them."""
    path = write_transcript(tmp_path / "root", hdr("big"), [e.to_value() for e in _big_events(6)])
    await _mount(f"jsonl:{tmp_path / 'root'}", client, plain)
    reading = await _metered(client, plain, "sessionQuery/readTitle", {"sessionId": "big"})
    size = path.stat().st_size
    assert len(reading) >= 3, reading
    assert all(m.endswith(f" of {size / 1e6:.1f} MB") for m in reading), reading


# -- our SQLite store: events, not bytes ---------------------------------------------------------


async def _events_counted(client: LanguageClient, plain: LanguageClient) -> list[list[str]]:
    """The mounted store's 5,000-event session "long", read by readEvent (which verifies the
    log) and readSession (which inspects it again): each read's messages, every one of them
    "reading k of 5,000 events"."""
    readings = []
    for method, params in (
        ("sessionQuery/readEvent", {"sessionId": "long", "seq": 4000}),
        ("sessionQuery/readSession", {"sessionId": "long"}),
    ):
        reading = await _metered(client, plain, method, params)
        assert len(reading) >= 3, reading
        assert all(re.fullmatch(r"reading [\d,]+ of 5,000 events", m) for m in reading), reading
        readings.append(reading)
    return readings


async def test_a_sqlite_session_reports_its_events(client, plain, tmp_path):
    db = tmp_path / "store.db"
    backend = SqliteBackend(str(db))
    backend.create(Header.from_value(hdr("long", 1, cwd="/p")))
    backend.append("long", [U(seq, f"message {seq}") for seq in range(5000)])
    backend.close()
    await _mount(f"sqlite:{db}?readOnly=true", client, plain)
    await _events_counted(client, plain)


# -- a postgres: store: events fetched and decoded, of the session's count -----------------------


async def test_a_postgres_session_reports_its_events(client, plain, pg_database):
    uri = pg_database.socket_uri()
    backend = open_postgres(uri)
    backend.create(Header.from_value(hdr("long", 1, cwd="/p")))
    for start in range(0, 5000, 1000):
        backend.append("long", [U(seq, f"message {seq}") for seq in range(start, start + 1000)])
    backend.close()
    await _mount(uri, client, plain)
    for reading in await _events_counted(client, plain):
        done = [int(m.split()[1].replace(",", "")) for m in reading]
        assert done == sorted(done) and done[-1] == 5000, reading


# -- OpenCode: records (message and part rows or files) ------------------------------------------

OPENCODE_ID = "ses_4a1e0c2e7ffeLong00000001"
TURNS = 400  # seven records a turn: two messages and five parts


def _opencode_session() -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for i in range(TURNS):
        user, answer = f"msg_{2 * i:010d}u", f"msg_{2 * i + 1:010d}a"
        created = 1767225600000 + 10 * i
        messages.append(
            {
                "info": {"id": user, "role": "user", "time": {"created": created}},
                "parts": [{"id": f"prt_{2 * i:010d}a", "type": "text", "text": f"prompt {i}"}],
            }
        )
        parts: list[dict[str, Any]] = [
            {"id": f"prt_{2 * i + 1:010d}a", "type": "step-start"},
            {"id": f"prt_{2 * i + 1:010d}b", "type": "text", "text": f"answer {i}"},
            {
                "id": f"prt_{2 * i + 1:010d}c",
                "type": "tool",
                "callID": f"c{i}",
                "tool": "read",
                "state": {"status": "completed", "input": {"i": i}, "output": "x" * 50},
            },
            {"id": f"prt_{2 * i + 1:010d}d", "type": "step-finish", "reason": "stop"},
        ]
        messages.append(
            {
                "info": {
                    "id": answer,
                    "role": "assistant",
                    "parentID": user,
                    "time": {"created": created + 5},
                    "modelID": "m",
                    "providerID": "p",
                    "finish": "stop",
                },
                "parts": parts,
            }
        )
    info = {
        "id": OPENCODE_ID,
        "directory": "/w",
        "title": "long",
        "version": "1",
        "time": {"created": 1767225600000, "updated": 1767225700000},
    }
    return {"session": info, "messages": messages}


@pytest.mark.parametrize("layout", ["db", "legacy"])
async def test_an_opencode_session_reports_its_records(client, plain, tmp_path, layout):
    home = tmp_path / "opencode"
    (write_db if layout == "db" else write_legacy)(home, [_opencode_session()])
    await _mount(f"opencode:{home}", client, plain)
    reading = await _metered(client, plain, "sessionQuery/readSession", {"sessionId": OPENCODE_ID})
    assert len(reading) >= 3, reading
    total = f"{7 * TURNS:,}"
    assert all(re.fullmatch(rf"reading [\d,]+ of {total} records", m) for m in reading), reading
