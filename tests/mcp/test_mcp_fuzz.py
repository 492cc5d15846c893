"""Fuzzed tool arguments over one real MCP client session (tools.md §1.5, §1.9): the server stays
up, and every answer is a well-formed tool result that never shows a hidden id or a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, types
from mcp.shared.exceptions import MCPError

from dsh_query_server.mcp.args import TOOLS
from tests.mcp_helpers import mcp_session, text_of, write_corpus

pytestmark = pytest.mark.wire

NAMES = [t.name for t in TOOLS]
# Each tool's own keys, and now and then one it does not have (refused by name, §1.5).
KEYS = {t.name: [p.name for p in t.props] + ["extra", "cursor"] for t in TOOLS}
HIDDEN = ("s-side", "/w/app-old")


Client = tuple[BlockingPortal, ClientSession]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    tmp = tmp_path_factory.mktemp("fuzz")
    write_corpus(f"jsonl:{tmp / 'ex'}?compression=none")
    args = [
        "--persistence",
        f"jsonl:{tmp / 'ex'}",
        "--index",
        ":memory:",
        "--workspace",
        "/w/app",
        "--caller-session",
        "s-leaf",
        "--search-timeout-ms",
        "20000",
    ]
    with start_blocking_portal("asyncio") as portal:
        with portal.wrap_async_context_manager(mcp_session(tmp, args)) as session:
            yield portal, session


ids = st.sampled_from(["s-root", "s-child", "s-leaf", "s-side", "s-ghost", "s-nope", ""])
stamps = st.sampled_from(
    [
        "2023-11-14T22:15:20Z",
        "2023-11-14T22:15:20.0005+01:00",
        "bad",
        "2023-02-29T00:00Z",
        "9999-12-31T23:59:59.999999Z",
        "0000-01-01T00:00Z",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    ids,
    stamps,
    st.sampled_from(["retry", "  ", "live", "current", "user/message"]),
)
values = st.one_of(
    scalars,
    st.lists(st.one_of(scalars, ids), max_size=4),
    st.dictionaries(st.text(max_size=4), scalars, max_size=2),
)


def arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(KEYS[name]), values, max_size=6)


def well_formed(result: Any, sent: dict[str, Any]) -> None:
    assert isinstance(result, types.CallToolResult)
    text = text_of(result)
    wire = result.model_dump_json(by_alias=True)
    assert "Traceback" not in wire
    sent_text = json.dumps(sent, ensure_ascii=False)
    for hidden in HIDDEN:
        assert hidden not in wire or hidden in sent_text
    assert isinstance(result.structured_content, dict)
    if result.is_error:
        error = result.structured_content["error"]
        assert set(error) == {"code", "message"}
        assert text == "Error: " + error["message"]
    else:
        assert "error" not in result.structured_content and text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_arguments(client: Client, data: st.DataObject) -> None:
    portal, session = client
    name = data.draw(st.sampled_from(NAMES))
    args = data.draw(arguments(name))
    result = portal.call(session.call_tool, name, args)
    well_formed(result, args)
    unknown = [k for k in args if k in ("extra", "cursor")]
    if unknown:  # an unknown argument is never ignored
        assert result.is_error and all(f'"{k}"' in text_of(result) for k in unknown)


def test_unknown_tool_is_a_protocol_error_and_the_server_stays_up(client: Client) -> None:
    portal, session = client
    with pytest.raises(MCPError) as info:
        portal.call(session.call_tool, "session_nope", {})
    assert info.value.error.code == -32602
    ok = portal.call(session.call_tool, "session_trace", {"session_id": "s-root"})
    assert not ok.is_error and text_of(ok).startswith("Session s-root — Retry policy")
