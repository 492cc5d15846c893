"""The server's own dispatch and stdio framing (server/protocol.py,
dispatch.py, transport.py), over the wire.

stdin is read by a thread that answers some requests itself (an inline method while nothing is in
flight, params that are not an object), hands other requests for our methods to a worker thread
while the event loop has caught up, and everything else to the loop in order; requests run in
worker threads. These tests pin what that must not change: answers in
order for inline requests, -32700 and framing recovery around them, cancellation of requests
waiting in a worker, the state a pipelined request sees (initialize, shutdown), and stdin that is
a regular file.
"""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys
import tempfile
import uuid

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.wire import ServerGone, WireClient, wait_until
from dsh_query_server.server.envelope import UNDECODABLE, shallow_members
from dsh_query_server.server.transport import Frames, frame, frame_parts, read_frame
from tests.builders import TEST_ENV, TEST_SERVER

pytestmark = pytest.mark.wire

ABORTED = "SESSION_QUERY_ABORTED"
STATUS = "sessionPersistence/status"


class RecordingClient(WireClient):
    """A WireClient that also records the ids of responses in arrival order."""

    def __init__(self, *args, **kwargs) -> None:
        self.order: list = []
        super().__init__(*args, **kwargs)

    def _dispatch(self, body: bytes) -> None:
        try:
            message = msgspec.json.decode(body)
        except msgspec.DecodeError:
            message = None
        if isinstance(message, dict) and "method" not in message:
            self.order.append(message.get("id"))
        super()._dispatch(body)

    def wait(self):
        # WireClient.wait closes the child's stdout (unbuffered) before joining its reader thread,
        # which may still be reading the end of input: EBADF in that thread. Let it finish first.
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._reader.join(5)
        return super().wait()


def start(initialize: bool = True) -> RecordingClient:
    return RecordingClient(
        command=[*TEST_SERVER, "--persistence", "none"],
        env=TEST_ENV,
        timeout=30,
        initialize=initialize,
        initialization_options={"index": ":memory:", "checkpoint": {"mode": "manual"}},
    )


def request(msg_id, method=STATUS, params=None) -> bytes:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return frame(json.dumps(message).encode())


def cancel(msg_id) -> bytes:
    return frame(
        json.dumps(
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}
        ).encode()
    )


def test_pipelined_inline_requests_are_answered_in_order():
    client = start()
    try:
        ids = [f"s{i}" for i in range(50)]
        futures = [client.expect(i) for i in ids] + [client.expect("bad-params")]
        data = (
            b"".join(request(i) for i in ids[:25])
            + request("bad-params", params=[1])
            + b"".join(request(i) for i in ids[25:])
        )
        client.order.clear()
        client.send_raw(data)
        responses = [f.result(10) for f in futures]
        assert client.order == ids[:25] + ["bad-params"] + ids[25:]
        assert all(
            r["result"] == {"uri": None, "writable": False, "pendingEvents": 0, "members": []}
            for r in responses[:-1]
        )
        error = responses[-1]["error"]
        assert (error["code"], error["data"]["code"]) == (-32602, "SESSION_QUERY_INVALID_REQUEST")
    finally:
        client.close()


@pytest.mark.slow
def test_inline_and_worker_requests_mixed_all_answered():
    client = start()
    try:
        client.request("sessionStore/create", {"header": {"id": "live", "createdAt": 1}})
        plan = []
        for i in range(40):
            plan.append((f"st{i}", STATUS, {}))
            plan.append((f"ls{i}", "sessionQuery/listSessions", {}))
            plan.append(
                (
                    f"ap{i}",
                    "sessionStore/append",
                    {
                        "sessionId": "live",
                        "events": [
                            {
                                "type": "user/message",
                                "surfaceOp": "append",
                                "data": {
                                    "id": f"m{i}",
                                    "role": "user",
                                    "source": {"kind": "user"},
                                    "content": [{"type": "text", "text": "hi"}],
                                },
                            }
                        ],
                    },
                )
            )
        futures = {msg_id: client.expect(msg_id) for msg_id, _, _ in plan}
        client.send_raw(
            b"".join(request(msg_id, method, params) for msg_id, method, params in plan)
        )
        for msg_id, future in futures.items():
            assert "result" in future.result(20), (msg_id, future.result())
        assert sorted(client.order[-len(plan) :]) == sorted(futures)
        assert client.request(STATUS)["pendingEvents"] == 0  # nothing mounted
        assert len(client.request("sessionQuery/listEvents", {"sessionId": "live"})) == 40
    finally:
        client.close()


@pytest.mark.slow
def test_malformed_frames_around_an_inline_request():
    client = start()
    try:
        futures = [client.expect("a"), client.expect("b"), client.expect("c")]
        before = len(client.orphans)
        client.send_raw(
            request("a")
            + frame(b"{not json")
            + request("b")
            + b"Content-Length: abc\r\n\r\n{}\r\n"  # unusable header: skipped
            + frame(
                b'{"jsonrpc":"2.0","id":"c","method":"sessionQuery/readEvent",'
                b'"params":{"sessionId":"live","seq":NaN}}'
            )
        )  # json.loads takes NaN
        a, b, c = (f.result(10) for f in futures)
        assert "result" in a and "result" in b
        assert c["error"]["code"] == -32602
        assert [i for i in client.order if i is not None][-3:] == ["a", "b", "c"]
        nulls = [o for o in client.orphans[before:] if isinstance(o, dict) and o.get("id") is None]
        assert [o["error"]["code"] for o in nulls] == [-32700]
        assert client.request(STATUS)["uri"] is None
    finally:
        client.close()


def test_a_header_line_longer_than_any_header_is_skipped():
    client = start()
    try:
        future = client.expect("after")
        client.send_raw(b"x" * (3 << 20) + b"\r\n" + request("after"))
        assert "result" in future.result(10)
    finally:
        client.close()


def test_request_waiting_in_a_worker_is_cancelled_with_the_coded_error(tmp_path):
    client = start()
    try:
        client.request("sessionPersistence/mount", {"uri": f"test:gate:{tmp_path}"})
        _, blocked = client.submit("sessionQuery/listSessions", {})
        assert wait_until(lambda: (tmp_path / "list.started").exists(), 10)
        # With a request in flight, status goes to a worker too: still answered at once.
        assert client.request(STATUS, timeout=5)["uri"] == f"test:gate:{tmp_path}"
        # Cancelled right behind its request, before or while its backend call runs.
        queued = client.expect("queued")
        validation = client.expect("invalid")
        client.send_raw(
            request("queued", "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0})
            + cancel("queued")
            + request("invalid", "sessionQuery/readEvent", "not an object")
            + cancel("invalid")
        )
        # Validation beats cancellation (§3.0.6), and needs no worker.
        error = validation.result(5)["error"]
        assert (error["code"], error["data"]["code"]) == (-32602, "SESSION_QUERY_INVALID_REQUEST")
        assert not blocked.done()
        (tmp_path / "release").write_text("")
        error = queued.result(15)["error"]
        assert (error["code"], error["data"]["code"], error["message"]) == (
            -32800,
            ABORTED,
            "session query request cancelled",
        )
        assert "result" in blocked.result(15)
    finally:
        (tmp_path / "release").write_text("")
        client.close()


@pytest.mark.slow
def test_shutdown_answers_requests_in_flight_first_and_takes_nothing_after(tmp_path):
    client = start()
    try:
        client.request("sessionPersistence/mount", {"uri": f"test:hang:{tmp_path}"})
        in_flight_id, in_flight = client.submit("sessionQuery/listSessions", {})
        assert wait_until(lambda: (tmp_path / "list.started").exists(), 10)
        shutdown, late = client.expect("bye"), client.expect("late")
        # status right behind shutdown, in the same write: it must not be answered.
        client.send_raw(request("bye", "shutdown") + request("late"))
        assert shutdown.result(15)["result"] is None
        error = in_flight.result(0)["error"]  # answered before the shutdown result
        assert (error["code"], error["data"]["code"]) == (-32800, ABORTED)
        assert (tmp_path / "list.settled").exists(), "answered before the backend call settled"
        assert client.order[-2:] == [in_flight_id, "bye"]
        client.notify("exit")
        assert client.process.wait(15) == 0
        assert wait_until(late.done, 5) and isinstance(late.exception(), ServerGone)
    finally:
        client.kill()


@pytest.mark.slow
def test_pipelined_requests_see_initialize_and_what_came_before():
    client = start(initialize=False)
    try:
        early, init, after = client.expect("early"), client.expect("init"), client.expect("after")
        client.send_raw(
            request("early")
            + request(
                "init",
                "initialize",
                {"capabilities": {}, "initializationOptions": {"index": ":memory:"}},
            )
            + request("after")
        )
        assert early.result(10)["error"]["code"] == -32002
        assert "capabilities" in init.result(10)["result"]
        assert after.result(10)["result"]["uri"] is None
        assert client.order[-3:] == ["early", "init", "after"]
    finally:
        client.close()


@pytest.mark.slow
def test_stdin_a_regular_file(tmp_path):
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"capabilities": {}, "initializationOptions": {"index": ":memory:"}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": STATUS, "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "sessionQuery/listSessions", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    path = tmp_path / "input"
    path.write_bytes(b"".join(frame(json.dumps(m).encode()) for m in messages))
    with open(path, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "dsh_query_server", "--persistence", "none"],
            stdin=stdin,
            capture_output=True,
            env=TEST_ENV,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    out, responses = io.BytesIO(done.stdout), {}
    while (body := read_frame(out)) is not None:
        message = json.loads(body)
        responses[message.get("id")] = message
    assert responses[2]["result"]["uri"] is None
    # Pipelined right behind its request, shutdown answers it first (result or coded -32800).
    assert responses[3].get("result") == [] or responses[3]["error"]["data"]["code"] == ABORTED
    assert responses[4]["result"] is None
    assert list(responses) == [1, 2, 3, 4]


@pytest.mark.slow
def test_notifications_for_our_methods_run_through_the_dispatcher_unanswered():
    client = start()
    try:
        before = len(client.orphans)
        client.notify("sessionStore/create", {"header": {"id": "by-notification", "createdAt": 1}})
        client.notify("sessionQuery/readEvent", [1])  # invalid params: still never answered
        assert wait_until(
            lambda: (
                [s["header"]["id"] for s in client.request("sessionQuery/listSessions")]
                == ["by-notification"]
            ),
            10,
        )
        assert client.request(STATUS)["uri"] is None
        assert client.orphans[before:] == []
    finally:
        client.close()


# A message pygls handles on the event loop (unknown $/ notification) and a body that is not JSON
# (-32700 from the loop): either makes the stdin thread post what follows instead of taking it.
LOOP_NOTIFICATION = frame(b'{"jsonrpc":"2.0","method":"$/unknownNotification","params":{}}')
NOT_JSON = frame(b"{not json")
GATED = {
    "list": ("sessionQuery/listSessions", {}),
    "read": ("sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0}),
}


@pytest.fixture(scope="module")
def shared_client():
    client = start()
    yield client
    client.close()


@pytest.mark.slow
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(["list", "read", "status", "bad-params"]),
            st.booleans(),
            st.sampled_from([b"", LOOP_NOTIFICATION, NOT_JSON]),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_requests_taken_by_the_stdin_thread_or_posted_to_the_loop_answer_alike(shared_client, plan):
    """Requests for a worker are handed to it by the stdin thread while the loop has handled
    everything read before them, and through the loop otherwise (a message pygls handles, a
    body that is not JSON, ahead of them in the same write). Either way: every request is
    answered exactly once, a $/cancelRequest right behind a request whose backend call is
    running always reaches it (-32800 once the call settles), validation beats cancellation,
    and status answers without waiting for the gated calls."""
    client = shared_client
    gate = pathlib.Path(tempfile.mkdtemp())
    client.request("sessionPersistence/mount", {"uri": f"test:gate:{gate}"})
    run = uuid.uuid4().hex
    data, expected = b"", {}
    for i, (kind, cancelled, junk) in enumerate(plan):
        msg_id = f"{run}-{i}"
        if kind in GATED:
            data += request(msg_id, *GATED[kind]) + (cancel(msg_id) if cancelled else b"")
            expected[msg_id] = ABORTED if cancelled else "gated"
        elif kind == "status":
            data += request(msg_id)
            expected[msg_id] = "result"
        else:
            data += request(msg_id, "sessionQuery/readEvent", [1]) + cancel(msg_id)
            expected[msg_id] = "SESSION_QUERY_INVALID_REQUEST"
        data += junk
    futures = {msg_id: client.expect(msg_id) for msg_id in expected}
    client.send_raw(data)
    # Answered once every message before it was handled (cancellations included), while the
    # gated calls still wait.
    assert client.request(STATUS, timeout=10)["uri"] == f"test:gate:{gate}"
    for (kind, _, _), msg_id in zip(plan, expected, strict=True):
        if kind in ("status", "bad-params"):  # answered while the gated calls still wait
            assert futures[msg_id].result(10)
    # A cancelled one may be answered at once (cancelled before its backend call started).
    assert not any(futures[m].done() for m, want in expected.items() if want == "gated")
    (gate / "release").write_text("")
    for msg_id, want in expected.items():
        response = futures[msg_id].result(20)
        if want in ("result", "gated"):
            assert "result" in response, response
        else:
            assert response["error"]["data"]["code"] == want, response
    assert all(client.order.count(msg_id) == 1 for msg_id in expected)


# -- transport.py: the one framing implementation -------------------------------------------------

bodies = st.lists(st.binary(min_size=1, max_size=300), max_size=8)


@settings(max_examples=200, deadline=None)
@given(
    bodies=bodies,
    noise=st.lists(st.sampled_from([b"", b"X-Other: 1\r\n", b"garbage\n"]), min_size=8, max_size=8),
    cuts=st.lists(st.integers(0, 4000), max_size=12),
)
def test_frames_and_read_frame_agree_on_any_chunking(bodies, noise, cuts):
    """The server's push parser (Frames, fed in arbitrary chunks) and the clients' pull parser
    (read_frame) read the same bodies out of the same stream, other header lines included."""
    stream = b"".join(
        n + (b"Content-Type: x\r\n" if i % 2 else b"") + frame(body)
        for i, (n, body) in enumerate(zip(noise[: len(bodies)], bodies, strict=True))
    )
    pushed: list[bytes] = []
    frames = Frames(lambda body: pushed.append(bytes(body)))
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    for start, end in zip(points, points[1:], strict=False):
        frames.feed(stream[start:end])
    pulled = []
    source = io.BytesIO(stream)
    while (body := read_frame(source)) is not None:
        pulled.append(body)
    assert pushed == pulled == bodies


def test_read_frame_ends_inside_a_frame_and_frame_parts_split_large_bodies():
    assert read_frame(io.BytesIO(b"Content-Length: 10\r\n\r\nshort")) is None
    assert read_frame(io.BytesIO(b"Content-Length: 0\r\n\r\n")) is None  # no usable header
    small, large = b"x" * 10, b"y" * (1 << 17)
    assert frame_parts(small) == (frame(small),)
    assert b"".join(frame_parts(large)) == frame(large) and len(frame_parts(large)) == 2


# -- envelope.py: the top-level members of bodies the decoders refuse ----------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_shallow_members_read_what_json_loads_reads(value):
    members = shallow_members(json.dumps(value, ensure_ascii=False).encode())
    if isinstance(value, dict):
        assert members == json.loads(json.dumps(value))
    else:
        assert members is None


@settings(max_examples=500, deadline=None)
@given(
    body=st.binary(max_size=30)
    | st.text(alphabet='{}[]:," 0123456789-.eEtruefalsn\\', max_size=30).map(str.encode)
)
def test_shallow_members_accept_exactly_the_json_objects(body):
    # json.loads also takes NaN and Infinity, and UTF-16/32 bodies (told by NULs up front).
    try:
        is_object = isinstance(json.loads(body), dict) and not any(
            marker in body for marker in (b"NaN", b"Infinity", b"\x00")
        )
    except ValueError:
        is_object = False
    assert (shallow_members(body) is not None) == is_object, body


def test_shallow_members_of_a_body_too_deep_for_the_decoders():
    depth = 50_000
    body = (
        b'{"params":{"a":' + b"[" * depth + b"]" * depth + b'},"id":"x","method":"m",'
        b'"n":' + b"9" * 5000 + b',"jsonrpc":"2.0"}'
    )
    members = shallow_members(body)
    assert members is not None
    assert (members["id"], members["method"], members["jsonrpc"]) == ("x", "m", "2.0")
    assert members["params"] is UNDECODABLE and members["n"] is UNDECODABLE
    assert shallow_members(body[:-1]) is None  # truncated: not JSON
