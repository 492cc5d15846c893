"""Invariants of the fold (hypothesis): the whole-log fold and the incremental manager agree
event by event, and a rejected append leaves the live store exactly as it was."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.errors import QueryError
from dsh_query_server.session.fold import FoldError, SurfaceManager, fold_surface
from dsh_query_server.session.store import SessionStore
from tests.builders import A, R, T, U, chunk, live_snapshot, log_only

MARKERS = ("turn/start", "step/start", "step/end", "tool/call", "session/title")


@st.composite
def valid_logs(draw, max_size=25):
    """Random valid logs: appends, positional replaces (forward and reversed ranges), tool-result
    rewrites, provenance citing any earlier event, log-only markers and chunks."""
    events = []
    nodes: list[int] = []
    for seq in range(draw(st.integers(0, max_size))):
        earlier = st.lists(st.integers(0, seq - 1), unique=True, max_size=3) if seq else st.just([])
        kind = draw(st.sampled_from(["append", "append", "replace", "marker", "chunk", "rewrite"]))
        if kind == "replace" and nodes:
            p, q = sorted(draw(st.lists(st.integers(0, len(nodes) - 1), min_size=2, max_size=2)))
            shadowed = nodes[p : q + 1]
            # Positional: after middle replacements the numeric order of start/end often differs.
            start, end = nodes[p], nodes[q]
            sources = shadowed + [s for s in draw(earlier) if s not in shadowed]
            maker = draw(st.sampled_from([U, A]))
            events.append(maker(seq, f"r{seq}", op=R(start, end), src=sources))
            nodes[p : q + 1] = [seq]
        elif kind == "rewrite" and nodes and events[nodes[-1]].type == "tool/result":
            target = nodes[-1]
            events.append(T(seq, f"rewritten {seq}", op=R(target, target), src=[target]))
            nodes[-1] = seq
        elif kind == "marker":
            events.append(log_only(draw(st.sampled_from(MARKERS)), seq, {"turn": 1}))
        elif kind == "chunk":
            events.append(chunk(seq, f"c{seq}"))
        else:
            sources = draw(earlier)
            maker = draw(st.sampled_from([U, A, T]))
            if maker is A:
                events.append(A(seq, f"a{seq}", src=sources if draw(st.booleans()) else None))
            else:
                events.append(maker(seq, f"m{seq}", src=sources or None))
            nodes.append(seq)
    return events, nodes


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_logs())
def test_fold_equals_incremental_manager(log):
    events, expected_nodes = log
    manager = SurfaceManager()
    for i, event in enumerate(events):
        manager.admit([event], events[:i])
        prefix = fold_surface(events[: i + 1])
        incremental = manager.fold()
        assert incremental.nodes == prefix.nodes
        assert incremental.shadowed_by == prefix.shadowed_by
        assert incremental.classes() == prefix.classes()
    assert fold_surface(events).nodes == expected_nodes


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_logs(), st.integers(0, 3), st.data())
def test_batch_appends_match_the_fold(log, split, data):
    """Appending a valid log in random batches through the live store gives the same fold."""
    events, _ = log
    store = SessionStore()
    store.create({"id": "s", "createdAt": 0})
    i = 0
    while i < len(events):
        n = data.draw(st.integers(1, max(1, len(events) - i)))
        store.append("s", [_input(e) for e in events[i : i + n]])
        i += n
    snap = live_snapshot(store, "s")
    assert snap.fold.classes() == fold_surface(events).classes()


def _input(event):
    value = event.to_value()
    value.pop("seq")
    return value


BAD_APPENDS = [
    lambda seq: {"type": "user/message", "data": U(0).data()},  # no surfaceOp
    lambda seq: {"type": "turn/start", "data": {}, "surfaceOp": "append"},
    lambda seq: U(0, op=R(10**6, 10**6), src=[0] if seq else None).to_value(),
    lambda seq: U(0, src=[seq + 5]).to_value(),
    lambda seq: {"type": "user/message", "data": {"role": "user"}, "surfaceOp": "append"},
    lambda seq: {"type": "x", "data": {}, "bogus": 1},
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_logs(max_size=12), st.sampled_from(BAD_APPENDS), st.integers(0, 3))
def test_rejected_append_changes_nothing(log, bad, good_prefix):
    events, _ = log
    store = SessionStore()
    store.create({"id": "s", "createdAt": 0}, [e.to_value() for e in events])
    before = live_snapshot(store, "s")
    generation = store.generation
    length = len(before.events)
    batch = [{"type": "turn/start", "data": {"turn": 9}}] * good_prefix
    batch.append({k: v for k, v in bad(length).items() if k != "seq"})
    try:
        store.append("s", batch)
    except QueryError:
        pass
    else:  # pragma: no cover - every bad append must be refused
        raise AssertionError("a bad append was admitted")
    after = live_snapshot(store, "s")
    assert [e.raw for e in after.events] == [e.raw for e in before.events]
    assert (
        after.fold.nodes == before.fold.nodes and after.fold.shadowed_by == before.fold.shadowed_by
    )
    assert after.fingerprint == before.fingerprint and after.changes == before.changes
    assert store.generation == generation
    # The store still accepts a good append after the refusal, and that one moves the generation.
    store.append("s", [{"type": "turn/start", "data": {"turn": 1}}])
    assert store.generation != generation


@given(valid_logs(max_size=10), st.integers(0, 30))
@settings(max_examples=100, deadline=None)
def test_a_missing_event_fails_the_fold_at_its_index(log, gap):
    events, _ = log
    if len(events) < 2:
        return
    cut = gap % (len(events) - 1)
    try:
        fold_surface(events[:cut] + events[cut + 1 :])
    except FoldError as exc:
        assert exc.message == f"session event seq {cut + 1} is not contiguous; expected {cut}"
    else:  # pragma: no cover
        raise AssertionError("a log with a gap folded")
