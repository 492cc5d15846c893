"""views.md §1–§2 over the wire: a real server on stdio (pytest-lsp) answers readTimeline and
readSurface {throughSeq}, with the error codes and precedence of views.md §1, and reads the usage
of a real Claude Code transcript through the claude: importer."""

from __future__ import annotations

import asyncio
import shutil

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.builders import TEST_ENV, U, hdr, user_data, write_transcript
from tests.import_helpers import REAL
from tests.lsp_client import call, config, init_params
from tests.server.test_server_e2e import fails

from .test_timeline import _input, worked_example

pytestmark = pytest.mark.wire

TIMELINE = "sessionQuery/readTimeline"
SURFACE = "sessionQuery/readSurface"


@pytest_lsp.fixture(config=config("--persistence", "none", env=TEST_ENV))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def create_example(client: LanguageClient) -> None:
    await call(client, "sessionStore/create", {"header": hdr("s1")})
    events = [_input(e) for e in worked_example()]
    await call(client, "sessionStore/append", {"sessionId": "s1", "events": events})


async def test_worked_example_over_the_wire(client):
    await create_example(client)
    timeline = await call(client, TIMELINE, {"sessionId": "s1"})
    assert timeline["session"] == hdr("s1")
    assert [(s["seq"], s["surface"]["approxTokens"]) for s in timeline["steps"]] == [
        (1, 2),
        (3, 3),
        (5, 4),
    ]
    assert timeline["steps"][0]["recorded"]["context"] == 10
    assert timeline["replacements"][0]["shadowed"] == {"count": 4, "firstSeq": 0, "lastSeq": 3}
    assert timeline["peak"] == {"seq": 5, "approxTokens": 4, "recordedContext": None}
    before = await call(client, SURFACE, {"sessionId": "s1", "throughSeq": 3})
    assert [e["seq"] for e in before["events"]] == [0, 1, 2, 3]
    assert before["capturedThroughSeq"] == 3
    after = await call(client, SURFACE, {"sessionId": "s1", "throughSeq": 4})
    assert [e["seq"] for e in after["events"]] == [4]
    now = await call(client, SURFACE, {"sessionId": "s1", "throughSeq": None})
    assert now == await call(client, SURFACE, {"sessionId": "s1"})


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"sessionId": "s1", "throughSeq": -1}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": "s1", "throughSeq": 1.5}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": "s1", "throughSeq": "3"}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": "s1", "throughSeq": True}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": "s1", "throughSeq": 2**53}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        # the request is checked before the load: an unknown id with a bad throughSeq
        ({"sessionId": "nope", "throughSeq": -1}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        # load errors come before EVENT_NOT_FOUND
        ({"sessionId": "nope", "throughSeq": 99}, (-32803, "SESSION_QUERY_SESSION_NOT_FOUND")),
        ({"sessionId": "s1", "throughSeq": 6}, (-32803, "SESSION_QUERY_EVENT_NOT_FOUND")),
        ({"sessionId": 7, "throughSeq": -1}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
    ],
)
async def test_read_surface_through_seq_errors(client, params, expected):
    await create_example(client)
    code, data_code, message = await fails(client, SURFACE, params)
    assert (code, data_code) == expected
    if isinstance(params["sessionId"], int):
        assert message == "sessionId must be a string"


async def test_event_not_found_names_the_seq(client):
    await create_example(client)
    with pytest.raises(Exception) as info:
        await call(client, SURFACE, {"sessionId": "s1", "throughSeq": 6})
    exc = info.value
    assert exc.data == {  # type: ignore[attr-defined]
        "code": "SESSION_QUERY_EVENT_NOT_FOUND",
        "sessionId": "s1",
        "seq": 6,
    }
    assert str(exc).find('session "s1" has no event at seq 6') >= 0


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": 7}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ({"sessionId": "nope"}, (-32803, "SESSION_QUERY_SESSION_NOT_FOUND")),
    ],
)
async def test_read_timeline_errors(client, params, expected):
    assert (await fails(client, TIMELINE, params))[:2] == expected


async def test_a_log_that_fails_its_fold_anywhere_has_no_past_surface(client, tmp_path):
    root = tmp_path / "root"
    write_transcript(
        root,
        hdr("bad-later"),
        [
            U(0, "fine"),
            # no surfaceOp: the fold fails at seq 1, while the prefix through 0 folds
            {"type": "user/message", "seq": 1, "time": 1, "data": user_data()},
        ],
    )
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}"})
    for method, params in [
        (SURFACE, {"sessionId": "bad-later", "throughSeq": 0}),
        (SURFACE, {"sessionId": "bad-later", "throughSeq": 50}),  # fold before the seq check
        (TIMELINE, {"sessionId": "bad-later"}),
    ]:
        assert (await fails(client, method, params))[:2] == (
            -32803,
            "SESSION_QUERY_INVALID_SURFACE",
        ), params


async def test_claude_usage_over_the_wire(client, tmp_path):
    home = tmp_path / "claude-home"
    target = home / "projects" / "-real" / "marot-spotter-tool_heavy.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(REAL / "claude-code" / "marot-spotter-tool_heavy.jsonl", target)
    await call(client, "sessionPersistence/mount", {"uri": f"claude:{home}"})
    timeline = await call(client, TIMELINE, {"sessionId": "marot-spotter-tool_heavy"})
    steps = timeline["steps"]
    by_step: dict[tuple[int, int], list] = {}
    for step in steps:
        by_step.setdefault((step["turn"], step["step"]), []).append(step["recorded"])
    # one response, several records: only the last carries the usage
    assert all(all(r is None for r in group[:-1]) for group in by_step.values())
    recorded = [s["recorded"] for s in steps if s["recorded"] is not None]
    assert len(recorded) == len(by_step)
    # msg_019BN3FRqb7NU4DgBN5jdsym: its last record says 173 output tokens, the first 25
    last = next(r for r in recorded if r["cacheRead"] == 26504)
    assert last == {
        "input": 47,
        "cacheRead": 26504,
        "cacheWrite": 1115,
        "output": 173,
        "reasoning": None,
        "context": 47 + 26504 + 1115,
    }
    assert all(s["model"] and s["model"].startswith("claude") for s in steps)
