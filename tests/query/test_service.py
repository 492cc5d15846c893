"""The exact query service in process: semantics.md §3–§5, the source matrix and precedence."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from dsh_query_server import errors
from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.model.event import Event
from dsh_query_server.model.params import decode
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.server.handlers.events import FilterEventsParams, ReadEventParams
from dsh_query_server.server.tree import labels
from dsh_query_server.session.store import SessionStore
from tests.builders import A, R, U, chunk, ev, example_a, example_c, hdr, log_only, user_data
from tests.fakes import MemoryBackend, ops


@pytest.fixture
def env():
    store = SessionStore()
    binding = PersistenceBinding()
    service = SessionQueryService(store, binding)
    return store, binding, service


def seed_values(events):
    return [e.to_value() for e in events]


def code_of(fn, *args, **kw):
    with pytest.raises(QueryError) as info:
        fn(*args, **kw)
    return info.value.code, info.value.message


def j(value):
    return to_builtins(value)


def read_event_params(**params: Any) -> ReadEventParams:
    """readEvent's params decoded as the server decodes them."""
    return decode(ReadEventParams, params)


def test_listing_order_example(env):
    store, _, service = env
    store.create(hdr("older", 1))
    store.create(hdr("z", 2))
    store.create(hdr("a", 2))
    out = j(service.list_sessions())
    assert [r["header"]["id"] for r in out] == ["a", "z", "older"]
    assert all(r["live"] and not r["persisted"] for r in out)
    assert set(out[0]) == {"header", "live", "persisted"}


def test_source_matrix_example(env):
    store, binding, service = env
    store.create(hdr("shared", 10, cwd="/p"), seed=seed_values([U(0, "live text")]))
    backend = MemoryBackend()
    backend.put(hdr("shared", 10, cwd="/p"), [U(0, "persisted text")])
    backend.put(hdr("durable", 5), [U(0, "durable")])
    binding.mount(backend)
    out = j(service.list_sessions())
    assert [(r["header"]["id"], r["live"], r["persisted"]) for r in out] == [
        ("shared", True, True),
        ("durable", False, True),
    ]
    window = j(service.read_event("shared", 0))
    assert window["target"]["data"]["content"][0]["text"] == "live text"
    backend.calls.clear()
    service.read_event("shared", 0)
    assert backend.calls == []  # a live target never touches persistence
    backend.put(hdr("shared", 10, cwd="/conflict"))
    assert code_of(service.list_sessions)[0] == errors.SOURCE_CONFLICT
    backend.put(hdr("shared", 10, cwd="/p", delegationDepth=1))
    assert code_of(service.list_sessions)[0] == errors.SOURCE_CONFLICT
    backend.put(hdr("shared", 10, cwd="/p", delegationDepth=0, agentPreset="x", origin="subagent"))
    assert len(service.list_sessions()) == 2
    binding.unmount()
    assert [(r["header"]["id"], r["persisted"]) for r in j(service.list_sessions())] == [
        ("shared", False)
    ]


def test_failing_backend_keeps_live_reads(env):
    store, binding, service = env
    store.create(hdr("live"), seed=[])
    backend = MemoryBackend()
    backend.fail["list"] = OSError("disk on fire")
    backend.fail["inspect"] = OSError("disk on fire")
    binding.mount(backend)
    assert j(service.list_events("live"))[0]["type"] == "session/end-seed"
    code, message = code_of(service.list_sessions)
    assert code == errors.PERSISTENCE_FAILED
    assert message == "session persistence listing failed: disk on fire"
    assert code_of(service.read_event, "gone", 0)[0] == errors.PERSISTENCE_FAILED
    titles = j(service.read_titles(["live", "gone"]))
    assert titles[0]["status"] == "fulfilled"
    assert titles[1]["reason"]["code"] == errors.PERSISTENCE_FAILED


def test_inspect_failures_map_by_class(env):
    _, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("bad"))
    backend.put(hdr("io"))
    backend.corrupt.add("bad")
    binding.mount(backend)
    code, message = code_of(service.list_events, "bad")
    assert (code, message) == (errors.CORRUPT_SESSION, 'stored session "bad" is corrupt: bad bytes')
    backend.fail["inspect"] = RuntimeError()
    code, message = code_of(service.list_events, "io")
    assert (code, message) == (
        errors.PERSISTENCE_FAILED,
        'failed to inspect session "io": unknown error',
    )
    backend.fail["inspect"] = QueryError(errors.INVALID_FILTER, "odd")
    assert code_of(service.list_events, "io")[0] == errors.PERSISTENCE_FAILED


def test_list_inspect_header_mismatch_is_conflict(env):
    _, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("s", 1), [U(0)])
    backend.inspect_meta["s"] = backend.sessions["s"][0].__class__.from_value(hdr("s", 2))
    binding.mount(backend)
    assert code_of(service.read_surface, "s")[0] == errors.SOURCE_CONFLICT


def test_attach_during_inspect_returns_live_copy(env):
    store, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("s", 1), [U(0, "persisted")])
    binding.mount(backend)
    original = backend.inspect

    def inspect(session_id, token=NULL_TOKEN):
        result = original(session_id, token)
        store.create(hdr("s", 99), seed=seed_values([U(0, "live")]))  # incompatible, but live wins
        return result

    backend.inspect = inspect
    window = j(service.read_event("s", 0))
    assert window["target"]["data"]["content"][0]["text"] == "live"


def test_not_found_without_backend(env):
    _, _, service = env
    code, message = code_of(service.read_surface, "nope")
    assert (code, message) == (errors.SESSION_NOT_FOUND, 'session "nope" not found')


def test_read_event_window_example(env):
    store, _, service = env
    service.read_window_max = 1
    events = [log_only("turn/start", 0, {"turn": 1}), U(1, "one"), U(2, "two"), U(3, "three")]
    store.create(hdr("s"), seed=seed_values(events))
    out = j(service.read_event("s", 2, 1, 1))
    assert (out["startSeq"], out["endSeq"], out["target"]["seq"]) == (1, 3, 2)
    assert [e["seq"] for e in out["events"]] == [1, 2, 3]
    code, message = code_of(service.read_event, "s", 9)
    assert (code, message) == (errors.EVENT_NOT_FOUND, 'session "s" has no event at seq 9')
    for seq in (-1, 0.5):
        assert code_of(service.read_event, "s", seq)[0] == errors.EVENT_NOT_FOUND
    assert j(service.read_event("s", 2.0))["target"]["seq"] == 2  # 2.0 is the integer 2
    for kw in ({"before": -1}, {"before": 2}, {"after": 0.5}, {"before": None}):
        code, message = code_of(service.read_event, "s", 2, **kw)
        assert code == errors.INVALID_WINDOW
    assert (
        code_of(service.read_event, "s", 2, before=2)[1]
        == "before must be an integer between 0 and 1"
    )
    # The kinds of sessionId and seq are the params struct's (server/handlers/events.py).
    assert code_of(read_event_params, sessionId=5, seq=2)[1] == "sessionId must be a string"
    assert code_of(read_event_params, sessionId="s", seq="2")[1] == "seq must be a number"
    assert code_of(read_event_params, sessionId="s", seq=True)[0] == errors.INVALID_REQUEST
    clipped = j(service.read_event("s", 0, 1, 1))
    assert (clipped["startSeq"], clipped["endSeq"]) == (0, 1)


def test_read_event_works_on_invalid_surface_and_checks_shape(env):
    _, binding, service = env
    backend = MemoryBackend()
    bad = ev("user/message", 1, {"role": "user"}, op="append")  # no id
    backend.put(hdr("s"), [ev("user/message", 0, user_data("x")), bad])  # seq 0 lacks surfaceOp
    binding.mount(backend)
    assert j(service.read_event("s", 0))["target"]["seq"] == 0
    code, message = code_of(service.read_event, "s", 0, 0, 1)
    assert (code, message) == (
        errors.CORRUPT_SESSION,
        "session event at seq 1 lacks an identified message",
    )
    assert code_of(service.list_events, "s")[0] == errors.INVALID_SURFACE
    assert code_of(service.trace_event, "s", 7)[0] == errors.EVENT_NOT_FOUND
    assert code_of(service.trace_event, "s", 0)[0] == errors.INVALID_SURFACE


def test_read_surface_order_and_list_events(env):
    store, _, service = env
    store.create(hdr("c"), seed=seed_values(example_c()))
    surface = j(service.read_surface("c"))
    assert [e["seq"] for e in surface["events"]] == [0, 4, 7]
    assert surface["capturedThroughSeq"] == 9  # the end-seed
    records = j(service.list_events("c"))
    assert [r["surface"] for r in records][:9] == [
        "current",
        "shadowed",
        "shadowed",
        "shadowed",
        "current",
        "log-only",
        "shadowed",
        "current",
        "log-only",
    ]
    store.create(hdr("empty"))
    assert j(service.read_surface("empty")) == {
        "session": hdr("empty"),
        "capturedThroughSeq": None,
        "events": [],
    }


def test_read_session_replay_validation(env):
    _, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("s"), [log_only("turn/start", 1, {"turn": 1})])
    backend.put(hdr("ok"), [U(0)])
    binding.mount(backend)
    code, message = code_of(service.read_session, "s")
    assert code == errors.CORRUPT_SESSION and "seed event at index 0 has seq 1" in message
    out = j(service.read_session("ok"))
    assert [e["seq"] for e in out["events"]] == [0]  # no end-seed added


def test_filter_events_combined_example(env):
    store, _, service = env
    events = [
        U(0, "Hello\n(AI)+", time=10),
        chunk(1),
        A(2, "replacement", op=R(0, 0), src=[0], time=11),
        log_only("turn/end", 3, {"turn": 1, "reason": {"kind": "interrupted"}}),
    ]
    store.create(hdr("s"), seed=seed_values(events))
    docs = j(service.filter_events("s", []))
    assert [(d["seq"], d["text"], d["surface"]) for d in docs] == [
        (0, "Hello\n(AI)+", "shadowed"),
        (2, "replacement", "current"),
        (3, "interrupted", "log-only"),
    ]
    filters = [
        {"kind": "seq", "from": 0, "to": 1},
        {"kind": "time", "from": 9, "to": 11},
        {"kind": "type", "values": ["user/message", "tool/result"]},
        {"kind": "surface", "values": ["shadowed"]},
        {"kind": "text", "text": "hello   (ai)+"},
    ]
    assert [d["seq"] for d in j(service.filter_events("s", filters))] == [0]
    assert j(service.filter_events("s", [{"kind": "surface", "values": []}])) == []
    assert (
        code_of(service.filter_events, "s", [{"kind": "text", "text": "  "}])[1]
        == "session text filter must contain non-whitespace text"
    )
    assert (
        code_of(service.filter_events, "missing", [{"kind": "text", "text": " "}])[0]
        == errors.SESSION_NOT_FOUND
    )
    assert code_of(service.filter_events, "s", None)[1] == "session filters must be an array"
    assert (
        code_of(service.filter_events, "s", [{"kind": "seq", "from": 2, "to": 1}])[1]
        == "session seq filter from must be less than or equal to to"
    )
    assert (
        code_of(service.filter_events, "s", [{"kind": "seq", "from": None}])[1]
        == "session seq filter from must be finite"
    )
    assert (
        code_of(service.filter_events, "s", [{"kind": "nope"}])[1]
        == 'session unknown filter kind "nope"'
    )
    assert code_of(service.filter_events, "s", [{}])[1] == "session unknown filter kind (missing)"
    assert (
        code_of(service.filter_events, "s", [{"kind": "surface", "values": ["x"]}])[1]
        == 'session surface filter contains unknown value "x"'
    )


def test_literal_scan_examples(env):
    store, _, service = env
    store.create(hdr("s"), seed=seed_values([U(0, "Alpha\n beta"), U(1, "other"), U(2, "café")]))

    def find(text: str) -> list[int]:
        return [d.seq for d in service.filter_events("s", [{"kind": "text", "text": text}])]

    assert find("alpha beta") == [0]
    assert find("CAFÉ") == [2]


def test_filter_sessions(env):
    store, binding, service = env
    store.create(hdr("a", 1, cwd="/x", parentSession="p"))
    store.create(hdr("b", 2))
    backend = MemoryBackend()
    backend.put(hdr("c", 3, cwd="/y"), [U(0)])
    binding.mount(backend)

    def ids(f: list[dict[str, Any]]) -> list[str]:
        return [j(r)["header"]["id"] for r in service.filter_sessions(f)]

    assert ids([]) == ["c", "b", "a"]
    assert ids([{"kind": "cwd", "values": [None]}]) == ["b"]
    assert ids([{"kind": "parent", "values": [None]}]) == ["c", "b"]
    assert ids([{"kind": "availability", "values": ["persisted"]}]) == ["c"]
    assert ids([{"kind": "availability", "values": []}]) == []
    assert ids([{"kind": "created-at", "from": 1.5, "to": 2.9999}]) == ["b"]
    assert ids([{"kind": "id", "values": ["a", "c"]}, {"kind": "cwd", "values": ["/y"]}]) == ["c"]
    assert (
        code_of(service.filter_sessions, [{"kind": "seq"}])[1]
        == 'session unknown filter kind "seq"'
    )
    assert (
        code_of(service.filter_sessions, [{"kind": "cwd", "values": [1]}])[1]
        == "session cwd filter values must be an array of strings or null"
    )
    assert (
        code_of(service.filter_sessions, [{"kind": "id", "values": [None]}])[1]
        == "session id filter values must be an array of strings"
    )


def test_titles(env):
    store, binding, service = env

    def title(seq: int, text: str, time: int = 20, **src: Any) -> Event:
        return log_only(
            "session/title",
            seq,
            {"title": text, "messageSeqs": [0], "source": src or {"kind": "user"}},
            time=time,
        )

    backend = MemoryBackend()
    backend.put(
        hdr("first"),
        [
            title(
                0,
                "Persisted title",
                kind="provider",
                provider="ds",
                model={"provider": "ds", "model": "m"},
                extra=1,
            )
        ],
    )
    backend.put(hdr("second"), [title(0, "Second")])
    backend.put(hdr("broken"), [title(0, "old"), log_only("session/title", 1, {"title": 5})])
    binding.mount(backend)
    out = j(service.read_titles(["second", "first", "second", "missing"]))
    assert [(r["sessionId"], r["status"]) for r in out] == [
        ("second", "fulfilled"),
        ("first", "fulfilled"),
        ("missing", "rejected"),
    ]
    assert out[1]["value"]["title"] == {
        "title": "Persisted title",
        "messageSeqs": [0],
        "source": {"kind": "provider", "provider": "ds", "model": {"provider": "ds", "model": "m"}},
        "eventSeq": 0,
        "updatedAt": 20,
    }
    assert ops(backend) == ["list", "inspect", "inspect"]
    assert [arg for op, arg in backend.calls if op == "inspect"] == ["second", "first"]
    assert out[2]["reason"]["code"] == errors.SESSION_NOT_FOUND
    broken = j(service.read_titles(["broken"]))[0]
    assert broken["reason"] == {
        "code": errors.CORRUPT_SESSION,
        "message": 'session "broken" has a malformed session/title event at seq 1',
    }
    binding.unmount()
    store.create(hdr("live"))
    assert j(service.read_titles(["live", "live"])) == [
        {"sessionId": "live", "status": "fulfilled", "value": {"session": hdr("live")}}
    ]
    assert code_of(service.read_title, "missing")[0] == errors.SESSION_NOT_FOUND


def test_lineage_example(env):
    store, _, service = env
    for sid, created, parent in [
        ("root", 0, None),
        ("parent", 1, "root"),
        ("target", 2, "parent"),
        ("b", 4, "target"),
        ("a", 4, "target"),
        ("older", 3, "target"),
        ("grandchild", 5, "a"),
        ("orphan", 6, "outside"),
    ]:
        store.create(hdr(sid, created, **({"parentSession": parent} if parent else {})))
    out = j(service.trace_session("target"))
    assert out["complete"] is True and out["root"]["header"]["id"] == "root"
    assert [r["header"]["id"] for r in out["ancestors"]] == ["parent", "root"]
    assert [n["session"]["header"]["id"] for n in out["descendants"]] == ["older", "a", "b"]
    assert [n["session"]["header"]["id"] for n in out["descendants"][1]["descendants"]] == [
        "grandchild"
    ]
    root = j(service.trace_session("root"))
    assert root["ancestors"] == [] and root["root"]["header"]["id"] == "root"
    orphan = j(service.trace_session("orphan"))
    assert orphan["complete"] is False and orphan["unresolvedParentId"] == "outside"
    assert "root" not in orphan and orphan["ancestors"] == []


def test_lineage_cycles_and_depth(env):
    store, _, service = env
    store.create(hdr("a", 0, parentSession="b"))
    store.create(hdr("b", 0, parentSession="a"))
    store.create(hdr("self", 0, parentSession="self"))
    assert code_of(service.trace_session, "a") == (
        errors.INVALID_LINEAGE,
        'session lineage contains a cycle at "a"',
    )
    assert code_of(service.trace_session, "self")[0] == errors.INVALID_LINEAGE
    for i in range(3000):
        store.create(hdr(f"n{i}", i, **({"parentSession": f"n{i - 1}"} if i else {})))
    deep = j(service.trace_session("n2999"))
    assert len(deep["ancestors"]) == 2999 and deep["root"]["header"]["id"] == "n0"
    top = service.trace_session("n0")
    assert bytes(top.descendants).count(b'"descendants"') == 2999


def test_trace_event_table_example_a(env):
    store, _, service = env
    store.create(hdr("a"), seed=seed_values(example_a()))
    rows = {
        2: (None, [], [], [], [3, 4, 8]),
        3: (4, [4, 8], [], [2], [4]),
        4: (8, [8], [3], [3, 2], [8]),
        8: (None, [], [4], [2, 4], []),
    }
    for seq, (by, chain, replaced, sources, derived) in rows.items():
        out = j(service.trace_event("a", seq))
        assert out.get("replacedBy") == by
        assert ("replacedBy" in out) == (by is not None)
        assert (
            out["replacementChain"],
            out["replacedEventSeqs"],
            out["sourceEventSeqs"],
            out["derivedEventSeqs"],
        ) == (chain, replaced, sources, derived)
        assert out["session"] == hdr("a")


def test_validation_beats_cancellation_and_no_backend_call(env):
    _, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("s"), [U(0)])
    binding.mount(backend)
    token = CancelToken()
    token.cancel()
    assert code_of(service.read_event, "s", 0, before=-1, token=token)[0] == errors.INVALID_WINDOW
    assert code_of(service.filter_sessions, "x", token=token)[0] == errors.INVALID_FILTER
    for call in (
        lambda: service.list_sessions(token),
        lambda: service.read_event("s", 0, token=token),
        lambda: service.trace_session("s", token),
        lambda: service.read_titles(["s"], token),
    ):
        code, message = code_of(call)
        assert (code, message) == (errors.ABORTED, "session query request cancelled")
    assert backend.calls == []


def test_cancel_during_backend_call_awaits_it_then_aborts(env):
    _, binding, service = env
    backend = MemoryBackend()
    backend.put(hdr("s"), [U(0)])
    backend.gate = threading.Event()
    binding.mount(backend)
    token = CancelToken()
    result = {}

    def run():
        try:
            service.read_event("s", 0, token=token)
        except QueryError as exc:
            result["code"] = exc.code

    thread = threading.Thread(target=run)
    thread.start()
    assert backend.started.wait(5)
    token.cancel()
    thread.join(0.2)
    assert thread.is_alive()  # still awaiting the backend call that ignores the token
    backend.fail["list"] = OSError("late failure is discarded")
    backend.gate.set()
    thread.join(5)
    assert result["code"] == errors.ABORTED
    assert ops(backend) == ["list"]  # no further call after the token fired


def test_results_are_detached(env):
    store, _, service = env
    store.create(hdr("s"), seed=seed_values([U(0)]))
    first = service.read_session("s")
    store.append("s", [{"type": "turn/start", "data": {"turn": 1}}])
    assert len(first.events) == 2 and len(service.read_session("s").events) == 3


def test_store_append_rules(env):
    store, _, service = env
    store.create(hdr("s"), seed=seed_values([U(0)]))
    first, last = store.append(
        "s", [{"type": "turn/start", "data": {"turn": 1}}, A(0).to_value() | {"seq": 3}]
    )
    assert (first, last) == (2, 3)
    with pytest.raises(QueryError) as info:
        store.append(
            "s",
            [{"type": "turn/end", "data": {}}, {"type": "user/message", "data": user_data("x")}],
        )
    assert info.value.code == errors.STORE_INVALID_EVENT and "events[1]" in info.value.message
    assert "requires a surfaceOp marker" in info.value.message
    assert len(service.read_session("s").events) == 4  # the failed batch left nothing
    with pytest.raises(QueryError) as info:
        store.append(
            "s",
            [
                {
                    "type": "user/message",
                    "data": user_data(),
                    "surfaceOp": R(0, 0),
                    "sourceEventSeqs": [0],
                },
                {
                    "type": "user/message",
                    "data": user_data(),
                    "surfaceOp": R(0, 0),
                    "sourceEventSeqs": [0],
                },
            ],
        )
    assert "not found in surface" in info.value.message
    assert (
        j(service.read_surface("s"))["events"][0]["seq"] == 0
    )  # the rollback restored the surface
    with pytest.raises(QueryError) as info:
        store.append("nope", [{"type": "x", "data": {}}])
    assert info.value.code == errors.STORE_SESSION_NOT_FOUND
    with pytest.raises(QueryError) as info:
        store.create(hdr("s"))
    assert info.value.code == errors.STORE_DUPLICATE_SESSION
    with pytest.raises(QueryError) as info:
        store.create(hdr("rel", cwd="relative"))
    assert (info.value.code, info.value.message) == (
        errors.STORE_INVALID_HEADER,
        'session header cwd must be an absolute path, got "relative"',
    )


def test_seed_boundary(env):
    store, _, service = env
    store.create(hdr("one"), seed=seed_values([U(0)]))
    first, _ = store.append("one", [{"type": "turn/start", "data": {"turn": 1}}])
    assert first == 2
    store.create(hdr("empty"), seed=[])
    assert [(r.seq, r.type) for r in service.list_events("empty")] == [(0, "session/end-seed")]
    store.create(hdr("ended"), seed=[{"type": "session/end-seed", "seq": 0, "time": 1, "data": {}}])
    assert len(service.list_events("ended")) == 1
    with pytest.raises(QueryError) as info:
        store.create(hdr("gap"), seed=[{"type": "turn/start", "seq": 1, "time": 1, "data": {}}])
    assert (
        info.value.message
        == "seed event at index 0 has seq 1 (expected 0); seed must be contiguous from 0"
    )
    store.remove("one")
    store.create(hdr("one"))
    assert store.ids()[-1] == "one"


def test_error_precedence_table(env):
    """semantics.md §3.12: the first failing check wins."""
    store, binding, service = env
    backend = MemoryBackend()
    bad_surface = [ev("user/message", 0, {"role": "user"})]  # no surfaceOp and no message id
    backend.put(hdr("bad"), bad_surface)
    backend.put(hdr("shared", 1, cwd="/persisted"))
    binding.mount(backend)
    fired = CancelToken()
    fired.cancel()
    # Request kinds first (the params struct): sessionId, then seq, then the window (service).
    bad_window = {"before": -1}
    assert code_of(read_event_params, sessionId=1, seq="x", **bad_window)[1] == (
        "sessionId must be a string"
    )
    assert code_of(read_event_params, sessionId="s", seq="x", **bad_window)[1] == (
        "seq must be a number"
    )
    assert code_of(service.read_event, "s", 0, **bad_window)[0] == errors.INVALID_WINDOW
    with pytest.raises(QueryError) as info:
        decode(FilterEventsParams, {"sessionId": 5, "filters": "bad"})
    assert info.value.code == errors.INVALID_REQUEST
    # Filter shape beats cancellation and load errors.
    assert code_of(service.filter_events, "missing", "bad", token=fired)[0] == errors.INVALID_FILTER
    # Cancellation beats load errors.
    assert code_of(service.read_event, "missing", 0, token=fired)[0] == errors.ABORTED
    assert code_of(service.trace_session, "missing", token=fired)[0] == errors.ABORTED
    # Load then fold then blank text; fold then message shape.
    assert (
        code_of(service.filter_events, "bad", [{"kind": "text", "text": " "}])[0]
        == errors.INVALID_SURFACE
    )
    assert code_of(service.read_surface, "bad")[0] == errors.INVALID_SURFACE
    # traceSession: SOURCE_CONFLICT beats SESSION_NOT_FOUND.
    store.create(hdr("shared", 1, cwd="/live"))
    assert code_of(service.trace_session, "missing")[0] == errors.SOURCE_CONFLICT
    # A live target never reaches the persisted conflict.
    assert j(service.read_surface("shared"))["events"] == []


# -- the service's one worker pool (titles and the tree's labels) ------------------------------


def test_titles_and_labels_share_one_bounded_pool():
    store, binding = SessionStore(), PersistenceBinding()
    service = SessionQueryService(store, binding, inspect_concurrency=2)
    backend = MemoryBackend()
    for i in range(6):
        backend.put(hdr(f"s{i}", i), [U(0, f"q{i}")])
    running, peak, lock = [0], [0], threading.Lock()
    inspect = backend.inspect

    def counting(session_id, token=NULL_TOKEN):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            threading.Event().wait(0.02)
            return inspect(session_id, token)
        finally:
            with lock:
                running[0] -= 1

    backend.inspect = counting
    binding.mount(backend)
    ids = [f"s{i}" for i in range(6)]
    records = service.corpus()
    threads = [
        threading.Thread(target=service.read_titles, args=(ids,)),
        threading.Thread(target=labels.read_labels, args=(service, records)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert peak[0] <= 2  # two requests at once still share the service's two workers
    assert ops(backend).count("inspect") == 12
