"""The surface fold and classification: semantics.md §2 worked examples and invalid logs."""

from __future__ import annotations

import pytest

from dsh_query_server.session.fold import FoldError, fold_surface
from tests.builders import A, R, T, U, chunk, ev, example_a, example_c, log_only, tool_result_data


def classes(events):
    fold = fold_surface(events)
    return fold, fold.classes()


def test_example_a():
    fold, cls = classes(example_a())
    assert fold.nodes == [8, 5]
    assert [s for s, c in enumerate(cls) if c == "log-only"] == [0, 1, 2, 6, 7]
    assert [s for s, c in enumerate(cls) if c == "shadowed"] == [3, 4]
    assert [s for s, c in enumerate(cls) if c == "current"] == [5, 8]
    assert fold.shadowed_by == {3: 4, 4: 8}


def test_example_b():
    events = [
        U(0, "old"),
        chunk(1),
        U(2, "checkpoint", op=R(0, 0), src=[0]),
        U(3, "retained tail"),
        U(4, "latest checkpoint", op=R(2, 3), src=[2, 3]),
        A(5, "latest answer"),
    ]
    fold, cls = classes(events)
    assert cls == ["shadowed", "log-only", "shadowed", "shadowed", "current", "current"]
    assert fold.nodes == [4, 5]
    assert fold.replacement_of[4].shadowed_seqs == (2, 3)
    assert fold.shadowed_by[0] == 2 and fold.shadowed_by[2] == 4 and fold.shadowed_by[3] == 4


def test_example_c():
    fold, cls = classes(example_c())
    assert fold.nodes == [0, 4, 7]
    assert cls == [
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
    assert fold.replacement_of[4].shadowed_seqs == (3, 2)
    assert fold.replacement_of[3].shadowed_seqs == (1,)


@pytest.mark.parametrize(
    "events,nodes",
    [
        (
            [U(0), A(1), log_only("turn/end", 2, {"turn": 1, "reason": {"kind": "completed"}})],
            [0, 1],
        ),
        ([U(0), U(1), A(2, op=R(0, 0), src=[0]), A(3, op=R(2, 1), src=[2, 1])], [3]),
        ([U(0, "a"), U(1, "b"), U(2, "c"), U(3, op=R(0, 1), src=[0, 1])], [3, 2]),
        ([U(0, "a"), U(1, "b"), U(2, op=R(1, 1), src=[1])], [0, 2]),
        ([U(0), U(1), U(2, op=R(0, 1), src=[0, 1])], [2]),
        ([A(0, src=[])], [0]),
    ],
)
def test_more_positional_examples(events, nodes):
    assert fold_surface(events).nodes == nodes


def test_replacement_records_of_reversed_range():
    fold = fold_surface([U(0), U(1), A(2, op=R(0, 0), src=[0]), A(3, op=R(2, 1), src=[2, 1])])
    reps = [(r.seq, r.start, r.end, r.shadowed_seqs) for r in fold.replacements]
    assert reps == [(2, 0, 0, (0,)), (3, 2, 1, (2, 1))]


def test_markers_then_replace_classification():
    events = [
        log_only("turn/start", 0, {"turn": 1}),
        log_only("step/start", 1, {"turn": 1, "step": 1}),
        U(2),
        chunk(3),
        A(4, op=R(2, 2), src=[2]),
    ]
    assert fold_surface(events).classes()[2:] == ["shadowed", "log-only", "current"]


def fails(events, message):
    with pytest.raises(FoldError) as info:
        fold_surface(events)
    assert info.value.message == message


def test_invalid_logs():
    fails(
        [ev("user/message", 0, {})],
        'session event "user/message" is surface-eligible and requires a surfaceOp marker',
    )
    fails(
        [log_only("turn/start", 0, op="append")],
        'session event "turn/start" is not surface-eligible and cannot carry surfaceOp',
    )
    fails(
        [U(0), log_only("turn/start", 1, src=[0])],
        'session event "turn/start" is not surface-eligible and cannot carry sourceEventSeqs',
    )
    fails([U(0, src=[])], "sourceEventSeqs must not be empty except on assistant/message")
    fails([U(0), U(1, src=[0, 0])], "sourceEventSeqs must not contain duplicates")
    dense = 'session event "user/message" sourceEventSeqs must densely contain non-negative safe integers'
    for bad in ([-1], [0.5], ["0"], [None], [True]):
        fails([U(0), U(1, src=bad)], dense)
    fails(
        [U(0), U(1, src="invalid")],
        "sourceEventSeqs on event at seq 1 must be an array when present",
    )
    fails([U(0, src=[1])], "sourceEventSeqs must reference earlier events: 1 >= current seq 0")
    fails([U(0, src=[0])], "sourceEventSeqs must reference earlier events: 0 >= current seq 0")
    fails(
        [U(0), U(1, op=R(0, 0))],
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 0",
    )
    fails(
        [chunk(0), U(1), U(2, op=R(1, 1), src=[0])],
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 1",
    )
    fails([U(0), U(1, op=R(9, 9), src=[0])], "surface replace: start seq 9 not found in surface")
    fails([U(0), U(1, op=R(0, 9), src=[0])], "surface replace: end seq 9 not found in surface")
    fails(
        [U(0), U(1), U(2, op=R(1, 0), src=[0, 1])],
        "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)",
    )
    fails(
        [U(0), U(1, op=R(0, 0), src=[0]), U(2, op=R(0, 0), src=[0])],
        "surface replace: start seq 0 not found in surface",
    )
    fails([U(0), ev("turn/start", 2, {})], "session event seq 2 is not contiguous; expected 1")
    fails(
        [U(0, op=None)],
        'session event "user/message" is surface-eligible and requires a surfaceOp marker',
    )


def test_invalid_surface_op_shapes():
    invalid = 'session event "user/message" carries an invalid surfaceOp'
    invalid_replace = 'session event "user/message" carries an invalid replace surfaceOp'
    for op in ([1], "prepend", 3):
        fails([ev("user/message", 0, {}, surfaceOp=op)], invalid)
    fails([ev("user/message", 0, {}, surfaceOp=None)], invalid)
    for op in (
        {"op": "replace", "start": 0},
        {"op": "replace", "start": 0, "end": 0, "x": 1},
        {"op": "swap", "start": 0, "end": 0},
        {"op": "replace", "start": -1, "end": 0},
        {"op": "replace", "start": 0.5, "end": 0},
        {"op": "replace", "start": True, "end": 0},
    ):
        fails([U(0), ev("user/message", 1, {}, surfaceOp=op, sourceEventSeqs=[0])], invalid_replace)


def test_tool_result_rewrite_rule():
    base = [log_only("tool/call", 0, {"callId": "c1"}), T(1, "one", src=[0])]
    assert fold_surface(base + [T(2, "two", op=R(1, 1), src=[1])]).nodes == [2]
    fails(
        base + [T(2, "x", op=R(1, 1), src=[1], mid="other")],
        "tool/result surface replacement may change only content",
    )
    fails(
        base + [T(2, "x", op=R(1, 1), src=[1], call_id="c2")],
        "tool/result surface replacement may change only content",
    )
    fails(
        base + [T(2, "x", op=R(1, 1), src=[1], is_error=True)],
        "tool/result surface replacement may change only content",
    )
    fails(
        [U(0), T(1, "x", op=R(0, 0), src=[0])],
        "tool/result surface replacement must target a current tool/result",
    )
    fails(
        [T(0, "a"), T(1, "b", mid="tr1"), T(2, "c", op=R(0, 1), src=[0, 1])],
        "tool/result surface replacement must rewrite exactly one current node",
    )


@pytest.mark.parametrize(
    "old,new",
    [
        ({"a": [1, 2]}, {"a": [1, 3]}),
        ({"a": [1]}, {"a": 1}),
        ({"a": 1}, {"b": 1}),
        ({"a": 1}, {"a": 1, "b": 2}),
    ],
)
def test_tool_result_meta_drift_is_rejected(old, new):
    events = [
        ev("tool/result", 0, tool_result_data(meta=old), op="append"),
        ev("tool/result", 1, tool_result_data(text="new", meta=new), op=R(0, 0), src=[0]),
    ]
    fails(events, "tool/result surface replacement may change only content")
