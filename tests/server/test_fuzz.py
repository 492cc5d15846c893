"""Fuzzing one long-lived server over stdio: hypothesis-generated params for every method, a few
huge and deep inputs, and malformed frames.

Every request with an id is answered, with a result or an error whose code is one the protocol
uses (never -32603 INTERNAL, which would be a server bug), and no message or data carries a
traceback or a server path. Afterwards the server is alive and answers a normal request.

What the server does where JSON-RPC leaves a choice (server/protocol.py, QueryProtocol):
- a body that is not JSON (or not UTF-8) is answered -32700 with id null; valid JSON the decoders
  refuse (nested too deep, an integer Python will not parse) is answered on its id when its id
  and method can be read (-32602, SESSION_QUERY_INVALID_REQUEST for our methods), else the same;
- a JSON value that is not a request object, a wrong or missing "jsonrpc", an id that is not a
  string, number or null, or a non-string method is answered -32600 (with the id when it is valid);
- a batch (array) is not supported: each request in it with an id gets -32600, else one -32600
  with id null;
- an unknown method is -32601; LSP params that do not fit their type are -32602;
- framing errors (no usable Content-Length) cannot be answered: the bytes are skipped until the
  next valid header, and a huge Content-Length waits for that many bytes instead of failing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.wire import WireClient
from dsh_query_server.hub.methods import METHODS as REGISTERED
from dsh_query_server.mcp.args import TOOL_BY_NAME
from dsh_query_server.model.params import fields as param_fields
from dsh_query_server.server.methods import METHODS as SERVER_METHODS
from dsh_query_server.server.transport import frame
from tests.builders import ROOT, TEST_ENV, TEST_SERVER, U

pytestmark = pytest.mark.wire

ALLOWED = {-32700, -32600, -32601, -32602, -32800, -32803, -32002}
FORBIDDEN = ("Traceback", 'File "', '.py"', ".py:", ".py,", "site-packages", ROOT, sys.prefix)

# Every registered method with the fields of its params struct (server/registry.py), a hub's own
# included (this server is a private serve, so it answers hub/* -32601: tests/hub/test_hub_fuzz.py
# fuzzes them on a hub), and two methods that are not ours.
METHODS = {
    **{name: [f.name for f in param_fields(m.params)] for name, m in REGISTERED.items()},
    "workspace/executeCommand": ["command", "arguments"],
    "sessionQuery/noSuchMethod": ["x"],
}
# mount is fuzzed only with values that cannot name a real location: a fuzzed absolute path (or
# "auto") would let the server create directories or files anywhere.
BAD_URIS = [
    None,
    5,
    [],
    {},
    "",
    "ftp:/x",
    "jsonl:",
    "jsonl:relative",
    "sqlite:rel.db",
    "jsonl:/x?bad=1",
    "sqlite:/x?journalMode=nope",
    "jsonl:/x%zz",
    "jsonl:/x%00",
    "\ud800",
    "jsonl:/\x00",
]

SPECIAL_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff",
    "x\ud800y",
    "\ufdd0",
    "\ufdd1",
    "😀",
    "live",
    "persisted-a",
    "sessions",
    "../../etc/passwd",
    "%00",
    "\u2028",
    "NaN",
    "-0",
    '"',
    "\\",
    "needle",
    "AND OR NOT",
    "*",
    "NEAR(a b)",
    "^",
    "{}",
    "[]",
]
SPECIAL_NUMBERS = [
    0,
    -0.0,
    -1,
    1.5,
    2**53,
    2**53 + 1,
    -(2**63),
    2**64,
    10**20,
    10**300,
    1e308,
    -1e308,
    5e-324,
    49,
    50,
    51,
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(SPECIAL_STRINGS)
    | st.sampled_from(SPECIAL_NUMBERS)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(max_size=8)
            | st.sampled_from(
                [
                    "kind",
                    "values",
                    "from",
                    "to",
                    "text",
                    "type",
                    "data",
                    "id",
                    "jsonrpc",
                    "method",
                    "surfaceOp",
                    "seq",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=15,
)
FILTER_KINDS = [
    "id",
    "cwd",
    "parent",
    "created-at",
    "availability",
    "seq",
    "time",
    "type",
    "surface",
    "text",
    "nope",
]
filters = st.lists(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(FILTER_KINDS)},
        optional={
            "values": json_values,
            "from": json_values,
            "to": json_values,
            "text": json_values,
        },
    ),
    max_size=4,
)
events = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["user/message", "turn/start", "assistant/chunk", "tool/result", "x"]
            )
            | json_values
        },
        optional={
            "data": json_values,
            "surfaceOp": json_values,
            "time": json_values,
            "sourceEventSeqs": json_values,
            "seq": json_values,
        },
    ),
    max_size=3,
)
# exportSession writes only below this directory (the server fixture makes it): any other
# outputPath is relative or no string.
EXPORT_DIR = os.path.join(tempfile.gettempdir(), f"dsh-fuzz-export-{os.getpid()}")
not_absolute = json_values.filter(lambda v: not (isinstance(v, str) and v.startswith("/")))
bad_uris = st.sampled_from(BAD_URIS)

FIELDS = {
    "filters": filters | json_values,
    "sessionFilters": filters | json_values,
    "eventFilters": filters | json_values,
    "sessionId": st.sampled_from(["live", "persisted-a", "nope"]) | json_values,
    "sessionIds": st.lists(st.sampled_from(["live", "persisted-a", "x"]) | json_values, max_size=4)
    | json_values,
    "seq": st.sampled_from(SPECIAL_NUMBERS) | json_values,
    "throughSeq": st.sampled_from(SPECIAL_NUMBERS) | st.none() | json_values,
    "before": json_values,
    "after": json_values,
    "query": st.sampled_from(["needle", '"needle"', "alpha beta", " "]) | json_values,
    "limit": st.sampled_from(SPECIAL_NUMBERS) | json_values,
    "cursor": json_values,
    "view": st.sampled_from(["sessions", "lineage", "events", "eventTrace"]) | json_values,
    "nodeId": json_values,
    "args": json_values,
    "header": st.fixed_dictionaries(
        {"id": st.text(max_size=12) | json_values},
        optional={
            "createdAt": json_values,
            "cwd": json_values,
            "version": json_values,
            "parentSession": json_values,
            "delegationDepth": json_values,
        },
    )
    | json_values,
    "seed": events | json_values,
    "events": events | json_values,
    "command": st.sampled_from(
        ["dshQuery.server.status", "dshQuery.server.checkpoint", "dshQuery.server.mount", "nope"]
    )
    | json_values,
    # executeCommand's arguments (an array), hub/callTool's (a tool's arguments, an object)
    "arguments": st.lists(json_values, max_size=2)
    | st.dictionaries(
        st.sampled_from(["query", "session_id", "session_ids", "seq", "after", "surfaces"]),
        json_values,
        max_size=3,
    )
    | json_values,
    "x": json_values,
    "uri": bad_uris | st.lists(bad_uris, max_size=3) | st.integers() | st.none(),
    "outputPath": st.sampled_from(
        [f"{EXPORT_DIR}/a.zip", f"{EXPORT_DIR}/no-such-dir/b.zip", "relative.zip", ""]
    )
    | not_absolute,
    "includeDescendants": json_values,
    "log": json_values,
    "includeMedia": json_values,
    "overwrite": json_values,
    "workspaceRoots": st.lists(st.sampled_from(["/p", "/", "rel"]), max_size=2) | json_values,
    # hub/render: any method name (hub/stop included: it must be refused); its params are drawn
    # per method where a hub answers them (tests/hub/test_hub_fuzz.py)
    "method": st.sampled_from([*sorted(SERVER_METHODS), "hub/stop", "hub/render", "nope"])
    | json_values,
    "params": json_values,
    "titles": st.booleans() | json_values,
    # hub/callTool: the MCP tools only read
    "name": st.sampled_from([*sorted(TOOL_BY_NAME), "rm_rf"]) | json_values,
    "workspace": st.fixed_dictionaries(
        {
            "roots": st.lists(st.sampled_from(["/p", "/", "rel"]), max_size=2) | json_values,
            "base": st.sampled_from(["/p", "rel", ""]) | json_values,
        }
    )
    | json_values,
    "caller": st.sampled_from(["live", "persisted-a", None]) | json_values,
    "maxResults": st.sampled_from(SPECIAL_NUMBERS) | json_values,
    "groupBy": st.sampled_from(["day", "week", "month", "agent", "model", "cwd", "session", "year"])
    | json_values,
    "since": st.sampled_from([*SPECIAL_NUMBERS, 0, 1767225600000]) | st.none() | json_values,
    "until": st.sampled_from([*SPECIAL_NUMBERS, 1767225600000]) | st.none() | json_values,
    # names that are no zone, and paths a zone name must never be read from
    "timeZone": st.sampled_from(["UTC", "Europe/Paris", "Nope/Zone", "../../etc/passwd", "/x", ""])
    | st.none()
    | json_values,
}


@st.composite
def requests(draw):
    method = draw(st.sampled_from(sorted(METHODS)))
    roll = draw(st.integers(0, 9))
    if roll == 0:
        params = draw(json_values)  # anything at all, not necessarily an object
    else:
        keys = METHODS[method]
        params = {k: draw(FIELDS[k]) for k in keys if draw(st.booleans()) or roll > 5}
        if draw(st.booleans()):
            params.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
    if (
        method == "workspace/executeCommand"
        and isinstance(params, dict)
        and params.get("command") == "dshQuery.server.mount"
    ):
        params["arguments"] = [{"uri": draw(st.sampled_from(BAD_URIS))}]
    return method, params


def check_response(response, method) -> None:
    assert ("result" in response) != ("error" in response), response
    if "error" in response:
        error = response["error"]
        assert error.get("code") in ALLOWED, (method, error)
        assert isinstance(error.get("message"), str)
        text = json.dumps(error)
        for needle in FORBIDDEN:
            assert needle not in text, (method, needle, text[:300])
        if error["code"] in (-32602, -32803, -32800) and method.startswith(
            ("sessionQuery/", "sessionStore/", "sessionPersistence/", "hub/")
        ):
            assert isinstance((error.get("data") or {}).get("code"), str), (method, error)


def ping(client: WireClient, timeout: float = 10) -> None:
    assert client.request("sessionPersistence/status", {}, timeout=timeout)["pendingEvents"] >= 0


def keep_binding(client: WireClient, method: str) -> None:
    """An unmount the fuzzing sent (it takes no params: most succeed) is undone."""
    if method == "sessionPersistence/unmount":
        client.request("sessionPersistence/mount", {"uri": "test:seeded"})


def test_every_field_of_every_registered_method_has_a_strategy():
    """A new method's fields get strategies chosen for them (a path or a URI must never name a
    real location), not whatever a default would draw."""
    missing = {(m, k) for m, keys in METHODS.items() for k in keys if k not in FIELDS}
    assert not missing, missing


@pytest.fixture(scope="module")
def server_stderr(tmp_path_factory):
    with open(tmp_path_factory.mktemp("fuzz") / "stderr", "w+b") as stream:
        yield stream


def tracebacks(stream) -> str:
    stream.flush()
    stream.seek(0)
    text = stream.read().decode("utf-8", "replace")
    return text if "Traceback" in text else ""


@pytest.fixture(scope="module")
def server(server_stderr):
    os.makedirs(EXPORT_DIR, mode=0o700, exist_ok=True)
    client = WireClient(
        command=[*TEST_SERVER, "--persistence", "none"],
        env=TEST_ENV,
        timeout=60,
        stderr=server_stderr,
        initialization_options={"index": ":memory:", "checkpoint": {"mode": "manual"}},
    )
    client.request(
        "sessionStore/create",
        {
            "header": {"id": "live", "createdAt": 5, "cwd": "/p"},
            "seed": [U(0, "needle").to_value()],
        },
    )
    client.request("sessionPersistence/mount", {"uri": "test:seeded"})
    yield client
    shutil.rmtree(EXPORT_DIR, ignore_errors=True)
    assert client.alive(), "the server died"
    ping(client)
    client.close()
    assert not tracebacks(server_stderr), tracebacks(server_stderr)[-3000:]


# make test runs a fixed, derandomized set; DSH_QUERY_FUZZ_EXAMPLES=5000 explores fresh inputs.
FUZZ = settings(
    max_examples=int(os.environ.get("DSH_QUERY_FUZZ_EXAMPLES", "300")),
    deadline=None,
    derandomize="DSH_QUERY_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)


@pytest.mark.slow
@FUZZ
@given(request=requests())
def test_generated_params_for_every_method(server, request):
    method, params = request
    response = server.call(method, params, timeout=30)
    check_response(response, method)
    keep_binding(server, method)


# -- hostile frames (issue 12 §5): deep params and odd ids, written as raw bytes ---------------

DEPTHS = [3, 200, 900, 1_100, 5_000, 40_000]
good_ids = (
    st.text(max_size=12)
    | st.integers(-(2**63), 2**64 - 1)
    | st.sampled_from([0, -0.0, 1.5, 1e300, "", "1"])
    | st.floats(allow_nan=False, allow_infinity=False)
)
BAD_IDS = [b"true", b"false", b"[1]", b"{}", b'{"id":1}', b"[" * 3000 + b"]" * 3000, b"9" * 5000]


@st.composite
def nested(draw) -> bytes:
    """A value nested ``depth`` levels deep, arrays and objects mixed, around a scalar."""
    depth = draw(st.sampled_from(DEPTHS))
    kinds = draw(st.lists(st.booleans(), min_size=1, max_size=7))
    opens = b"".join(b"[" if kinds[i % len(kinds)] else b'{"k":' for i in range(depth))
    closes = b"".join(b"]" if kinds[i % len(kinds)] else b"}" for i in reversed(range(depth)))
    leaf = json.dumps(draw(scalars)).encode()
    return opens + leaf + closes


@st.composite
def hostile_requests(draw):
    method = draw(st.sampled_from(sorted(METHODS) + ["initialize", "shutdown"]))
    deep = draw(nested())
    keys = METHODS.get(method) or ["x"]
    if draw(st.booleans()):
        params = deep  # the whole params value
    else:
        fields = [
            b'"%s":%s' % (k.encode(), json.dumps(draw(FIELDS.get(k, json_values))).encode())
            for k in keys
            if draw(st.booleans())
        ]
        fields.insert(
            draw(st.integers(0, len(fields))),
            b'"%s":%s' % (draw(st.sampled_from(keys)).encode(), deep),
        )
        params = b"{" + b",".join(fields) + b"}"
    return method, params


def hostile_frame(method: str, params: bytes, raw_id: bytes, id_first: bool) -> bytes:
    head = b'"jsonrpc":"2.0","method":%s' % json.dumps(method).encode()
    members = [b'"id":' + raw_id, head, b'"params":' + params]
    return frame(b"{" + b",".join(members if id_first else members[::-1]) + b"}")


@settings(FUZZ, max_examples=int(os.environ.get("DSH_QUERY_FUZZ_EXAMPLES", "150")))
@given(request=hostile_requests(), msg_id=good_ids, id_first=st.booleans())
def test_deep_params_are_answered_on_their_id(server, request, msg_id, id_first):
    """Every method, params nested past the decoder's limit (or not), any usable id: the answer
    comes on that id (issue 12 §5), with a result or a coded error."""
    method, params = request
    if method == "shutdown":  # a shutdown that decodes would end the fuzzing server
        method = "sessionQuery/noSuchMethod"
    raw_id = json.dumps(msg_id).encode()
    future = server.expect(json.loads(raw_id))
    before = len(server.orphans)
    server.send_raw(hostile_frame(method, params, raw_id, id_first))
    response = future.result(30)
    check_response(response, method)
    keep_binding(server, method)
    assert not [o for o in server.orphans[before:] if isinstance(o, dict) and "error" in o], (
        server.orphans[before:]
    )


@settings(FUZZ, max_examples=int(os.environ.get("DSH_QUERY_FUZZ_EXAMPLES", "60")))
@given(
    method=st.sampled_from(sorted(METHODS)),
    params=nested() | st.just(b"{}"),
    raw_id=st.sampled_from(BAD_IDS),
    id_first=st.booleans(),
)
def test_ids_that_cannot_name_a_request_get_one_null_answer(
    server, method, params, raw_id, id_first
):
    before = len(server.orphans)
    server.send_raw(hostile_frame(method, params, raw_id, id_first))
    ping(server)
    answers = [o for o in server.orphans[before:] if isinstance(o, dict)]
    assert [(o.get("id"), o["error"]["code"]) for o in answers] in (
        [(None, -32600)],
        [(None, -32700)],
    ), answers


@settings(FUZZ, max_examples=int(os.environ.get("DSH_QUERY_FUZZ_EXAMPLES", "60")))
@given(cancel_id=json_values | st.sampled_from([[1], {"x": 1}, [[]], None, True]))
def test_cancel_with_any_id_is_quiet(server, cancel_id):
    server.cancel(cancel_id)
    ping(server)


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(["uri", "x"]), st.sampled_from(BAD_URIS) | json_values, max_size=2
    )
)
def test_mount_with_bad_uris_keeps_the_binding(server, params):
    if (
        isinstance(params.get("uri"), str)
        and params["uri"].startswith(("jsonl:/", "sqlite:/", "test:"))
        and "?" not in params["uri"]
        and "%" not in params["uri"]
        and "\x00" not in params["uri"]
    ):
        params["uri"] = 5  # a well-formed absolute location could create files: not here
    response = server.call("sessionPersistence/mount", params)
    check_response(response, "sessionPersistence/mount")
    assert "error" in response
    assert server.request("sessionPersistence/status")["uri"] == "test:seeded"


def test_huge_and_deep_inputs(server):
    big = "x" * (10 * 1024 * 1024)
    # Its own target: the fuzzing above may have removed or extended "live".
    server.request("sessionStore/create", {"header": {"id": "huge-target", "createdAt": 6}})
    cases = [
        ("sessionQuery/readEvent", {"sessionId": big, "seq": 0}),
        ("sessionQuery/searchSessions", {"query": big}),
        (
            "sessionQuery/filterEvents",
            {"sessionId": "live", "filters": [{"kind": "text", "text": big}]},
        ),
        ("sessionStore/create", {"header": {"id": "big", "createdAt": 1, "cwd": "/" + big}}),
        (
            "sessionStore/append",
            {
                "sessionId": "huge-target",
                "events": [
                    {
                        "type": "user/message",
                        "surfaceOp": "append",
                        "data": {
                            "id": "m-big",
                            "role": "user",
                            "source": {"kind": "user"},
                            "content": [{"type": "text", "text": big}],
                        },
                    }
                ],
            },
        ),
        ("sessionQuery/readTitles", {"sessionIds": ["live"] * 100_000}),
        ("sessionQuery/filterSessions", {"filters": [{"kind": "id", "values": ["a"] * 200_000}]}),
        ("sessionQuery/readEvent", {"sessionId": "live", "seq": 10**400}),
        ("sessionQuery/readEvent", {"sessionId": "live", "seq": 0, "before": 10**30}),
    ]
    big_seq = None
    for method, params in cases:
        started = time.monotonic()
        response = server.call(method, params, timeout=60)
        check_response(response, method)
        assert time.monotonic() - started < 30, method
        if method == "sessionStore/append":
            assert "result" in response, response
            big_seq = response["result"]["firstSeq"]
    # The 10 MB message was appended (it is a valid event) and reads back whole.
    window = server.request("sessionQuery/readEvent", {"sessionId": "huge-target", "seq": big_seq})
    assert len(window["target"]["data"]["content"][0]["text"]) == len(big)
    # Nesting: 50 levels is an ordinary invalid value; 100,000 levels are valid JSON the decoder
    # cannot read: answered on its id all the same (issue 12 §5), never as an id-null -32700.
    for depth, data_code in (
        (50, "SESSION_QUERY_INVALID_FILTER"),
        (100_000, "SESSION_QUERY_INVALID_REQUEST"),
    ):
        body = (
            b'{"jsonrpc":"2.0","id":"deep-%d","method":"sessionQuery/filterSessions","params":{"filters":'
            % depth
            + b"[" * depth
            + b"]" * depth
            + b"}}"
        )
        future = server.expect(f"deep-{depth}")
        before = len(server.orphans)
        server.send_raw(frame(body))
        response = future.result(30)
        check_response(response, "sessionQuery/filterSessions")
        assert (response["error"]["code"], response["error"]["data"]["code"]) == (-32602, data_code)
        ping(server)
        assert not [o for o in server.orphans[before:] if isinstance(o, dict) and "error" in o]
    ping(server)


def raw_request(msg_id, method="sessionPersistence/status", **extra) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}, **extra}
    ).encode()


MALFORMED = [
    # (label, bytes, ids that must be answered with these codes, code of an id-null answer or None)
    ("not json", frame(b"{not json"), {}, -32700),
    (
        "invalid utf-8",
        frame(
            b'{"jsonrpc":"2.0","id":"u8","method":"sessionPersistence/status","params":{"x":"\xff"}}'
        ),
        {},
        -32700,
    ),
    ("truncated json", frame(b'{"jsonrpc":"2.0","id":"tr","method":"sessi'), {}, -32700),
    ("empty object", frame(b"{}"), {}, -32600),
    ("scalar", frame(b"42"), {}, -32600),
    ("string", frame(b'"hello"'), {}, -32600),
    ("null", frame(b"null"), {}, -32600),
    ("empty batch", frame(b"[]"), {}, -32600),
    (
        "batch",
        frame(b"[" + raw_request("b1") + b"," + raw_request("b2") + b"]"),
        {"b1": -32600, "b2": -32600},
        None,
    ),
    (
        "no jsonrpc",
        frame(b'{"id":"nj","method":"sessionPersistence/status"}'),
        {"nj": -32600},
        None,
    ),
    (
        "jsonrpc 1.0",
        frame(b'{"jsonrpc":"1.0","id":"v1","method":"sessionPersistence/status"}'),
        {"v1": -32600},
        None,
    ),
    (
        "object id",
        frame(b'{"jsonrpc":"2.0","id":{"a":1},"method":"sessionPersistence/status"}'),
        {},
        -32600,
    ),
    (
        "bool id",
        frame(b'{"jsonrpc":"2.0","id":true,"method":"sessionPersistence/status"}'),
        {},
        -32600,
    ),
    ("method not a string", frame(b'{"jsonrpc":"2.0","id":"mi","method":5}'), {"mi": -32600}, None),
    ("no method", frame(b'{"jsonrpc":"2.0","id":"nm"}'), {"nm": -32600}, None),
    (
        "unknown method, no params",
        frame(b'{"jsonrpc":"2.0","id":"um","method":"x/y"}'),
        {"um": -32601},
        None,
    ),
    (
        "lsp params of the wrong type",
        frame(b'{"jsonrpc":"2.0","id":"lp","method":"workspace/executeCommand","params":[1,2]}'),
        {"lp": -32602},
        None,
    ),
    ("params a string", frame(raw_request("ps", params="x")), {"ps": -32602}, None),
    (
        "nested jsonrpc objects in params",
        frame(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": "nest",
                    "method": "sessionQuery/filterSessions",
                    "params": {"filters": [{"jsonrpc": "2.0", "method": "x", "id": 1}]},
                }
            ).encode()
        ),
        {"nest": -32602},
        None,
    ),
    # Valid JSON the decoders refuse still has a usable id: answered on it (issue 12 §5).
    (
        "integer beyond Python's parser",
        frame(
            b'{"jsonrpc":"2.0","id":"bi","method":"sessionQuery/readEvent",'
            b'"params":{"sessionId":"live","seq":' + b"9" * 5000 + b"}}"
        ),
        {"bi": -32602},
        None,
    ),
    (
        "id beyond Python's parser",
        frame(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}'),
        {},
        -32700,
    ),
    (
        "NaN and Infinity",
        frame(
            b'{"jsonrpc":"2.0","id":"nan","method":"sessionQuery/readEvent",'
            b'"params":{"sessionId":"live","seq":NaN,"before":Infinity}}'
        ),
        {"nan": -32602},
        None,
    ),
    ("unknown notification", frame(b'{"jsonrpc":"2.0","method":"x/notify","params":{}}'), {}, None),
    (
        "cancel with an odd id",
        frame(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{"x":1}}}'),
        {},
        None,
    ),
    (
        "cancel with an array id",
        frame(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":[1]}}'),
        {},
        None,
    ),
    (
        "cancel with a null id",
        frame(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":null}}'),
        {},
        None,
    ),
    ("response nobody asked for", frame(b'{"jsonrpc":"2.0","id":"r","result":1}'), {}, None),
    # Framing errors: nothing to answer; the bytes are skipped up to the next valid header.
    ("bad content-length", b"Content-Length: abc\r\n\r\n" + raw_request("bcl") + b"\r\n", {}, None),
    (
        "negative content-length",
        b"Content-Length: -5\r\n\r\n" + raw_request("neg") + b"\r\n",
        {},
        None,
    ),
    ("zero content-length", b"Content-Length: 0\r\n\r\n\r\n", {}, None),
    ("no header at all", raw_request("nh") + b"\r\n", {}, None),
    (
        "short content-length",
        b"Content-Length: 10\r\n\r\n" + raw_request("sh") + b"\r\n",
        {},
        -32700,
    ),
    (
        "extra headers",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + frame(raw_request("eh")),
        {"eh": None},
        None,
    ),
]


@pytest.mark.parametrize("label,data,answers,null_code", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_frames(server, label, data, answers, null_code):
    futures = {msg_id: server.expect(msg_id) for msg_id in answers}
    before = len(server.orphans)
    server.send_raw(data)
    for msg_id, code in answers.items():
        response = futures[msg_id].result(10)
        if code is None:
            assert "result" in response, (label, response)
        else:
            assert response["error"]["code"] == code, (label, response)
            check_response(response, "?")
    ping(server)  # still alive and in sync
    nulls = [o for o in server.orphans[before:] if isinstance(o, dict) and o.get("id") is None]
    if null_code is None:
        assert not any("error" in o for o in nulls), (label, nulls)
    else:
        assert [o["error"]["code"] for o in nulls] == [null_code], (label, nulls)
        check_response(nulls[0], "?")


def test_huge_content_length_does_not_kill_the_server(tmp_path):
    """Announcing 10**17 bytes made pygls allocate them at once (MemoryError ended the server).
    Now the server waits for the bytes; closing the connection ends it normally."""
    client = WireClient(
        command=[*TEST_SERVER, "--persistence", "none"],
        env=TEST_ENV,
        timeout=30,
        initialization_options={"index": ":memory:"},
    )
    try:
        client.send_raw(b"Content-Length: 100000000000000000\r\n\r\n" + raw_request("huge"))
        time.sleep(1.0)
        assert client.alive()
        stdin = client.process.stdin
        assert stdin is not None
        stdin.close()
        assert client.process.wait(15) == 0
    finally:
        client.kill()


def test_requests_before_initialize_and_a_second_initialize():
    client = WireClient(
        command=[*TEST_SERVER, "--persistence", "none"], env=TEST_ENV, timeout=30, initialize=False
    )
    try:
        early = client.call("sessionQuery/listSessions", {})
        assert early["error"]["code"] == -32002
        odd = client.call("initialize", {"capabilities": 5})
        assert odd["error"]["code"] == -32602
        bad = client.call("initialize", {"capabilities": {}, "initializationOptions": [1, 2]})
        check_response(bad, "initialize")
        good = client.call(
            "initialize", {"capabilities": {}, "initializationOptions": {"index": ":memory:"}}
        )
        assert "result" in good
        ping(client)
    finally:
        client.close()


@pytest.mark.parametrize("method", ["sessionQuery/treeChildren", "sessionQuery/treeParent"])
@pytest.mark.parametrize("view", [[], {"a": 1}])
def test_tree_view_of_the_wrong_kind_is_invalid_request(server, method, view):
    response = server.call(method, {"view": view, "nodeId": "x"})
    assert response["error"]["code"] == -32602, response
    assert response["error"]["data"]["code"] == "SESSION_QUERY_INVALID_REQUEST"


def test_stderr_has_no_traceback(server, server_stderr):
    """Last in this module: nothing the fuzzing above sent made the server log a traceback."""
    ping(server)
    assert not tracebacks(server_stderr), tracebacks(server_stderr)[-3000:]
