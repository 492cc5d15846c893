"""The pieces of ``show`` and ``timeline`` that are pure functions: the transcript's rows and the
chart's columns (hypothesis over random logs and timelines)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.cli import timeline
from dsh_query_server.cli.transcript import (
    MESSAGE_TYPES,
    Divider,
    Folded,
    Message,
    folded_summary,
    log_rows,
    shadowed_text,
)

TYPES = st.sampled_from([*sorted(MESSAGE_TYPES), "turn/start", "tool/call", "assistant/chunk"])


@given(st.lists(TYPES, max_size=60), st.data())
def test_every_event_shows_once_and_dividers_precede_their_replacement(types, data):
    events = [{"seq": i, "type": t} for i, t in enumerate(types)]
    messages = [e["seq"] for e in events if e["type"] in MESSAGE_TYPES]
    replacing = data.draw(
        st.lists(st.sampled_from(messages), unique=True) if messages else st.just([])
    )
    reps = [{"seq": s} for s in sorted(replacing)]
    rows = log_rows(events, {}, reps)
    shown: list[int] = []
    for i, row in enumerate(rows):
        if isinstance(row, Message):
            shown.append(row.event["seq"])
        elif isinstance(row, Folded):
            shown += row.seqs
            assert all(types[s] not in MESSAGE_TYPES for s in row.seqs)
            assert not (i and isinstance(rows[i - 1], Folded))  # a run is one line
        else:
            assert isinstance(row, Divider)
            after = rows[i + 1]
            assert isinstance(after, Message) and after.event["seq"] == row.replacement["seq"]
    assert shown == list(range(len(events)))
    assert sum(isinstance(r, Divider) for r in rows) == len(reps)


def test_words_of_dividers_and_folded_runs():
    rep = {"seq": 948, "shadowed": {"count": 191, "firstSeq": 7, "lastSeq": 946}}
    assert shadowed_text(rep) == "191 events, #7–#946, replaced by #948"
    one = {"seq": 5, "shadowed": {"count": 1, "firstSeq": 3, "lastSeq": 3}}
    assert shadowed_text(one) == "1 event, #3, replaced by #5"
    run = Folded([3, 4, 5, 6], ["step/start", "assistant/chunk", "assistant/chunk", "step/end"])
    assert folded_summary(run) == "4 events (#3–#6): step/start, assistant/chunk ×2, step/end"


def step(seq: int, approx: int, context: int | None) -> dict:
    recorded = None if context is None else {"context": context}
    return {"seq": seq, "surface": {"approxTokens": approx}, "recorded": recorded}


STEPS = st.lists(
    st.tuples(st.integers(0, 10**6), st.one_of(st.none(), st.integers(0, 10**6))), max_size=400
)


@given(STEPS, st.integers(10, 200))
def test_columns_cover_every_step_and_show_the_largest_value(raw, width):
    steps = [step(i, a, c) for i, (a, c) in enumerate(raw)]
    cols = timeline.columns(steps, width)
    assert len(cols) <= width
    bars = [c for c in cols if not c.gap]
    assert {i for c in bars for i in range(c.first, c.last + 1)} == set(range(len(steps)))
    for c in bars:
        assert (c.value, c.recorded) == max(
            timeline.step_value(s) for s in steps[c.first : c.last + 1]
        )


@given(STEPS.filter(bool), st.integers(10, 200), st.data())
def test_a_compaction_is_marked_under_the_first_step_after_it(raw, width, data):
    steps = [step(i * 10, a, c) for i, (a, c) in enumerate(raw)]
    at = data.draw(st.integers(0, len(steps) * 10 + 5))
    rep = {"seq": at, "kind": "compaction"}
    cols = timeline.columns(steps, width)
    [(column, _)] = timeline.marks(steps, [rep, {"seq": 1, "kind": "tool-result-rewrite"}], cols)
    after = next((i for i, s in enumerate(steps) if s["seq"] > at), None)
    if after is None:
        assert column == len(cols) - 1
    else:
        assert cols[column].first <= after <= cols[column].last
        assert column == 0 or cols[column - 1].last < after


# -- sessions --json: records cut from the server's indented listing --------------------------------

# Strings full of what could fool a cut at "\n  },\n": braces, commas, spaces, newlines.
TRICKY = st.text(alphabet=st.sampled_from('a}{ ,\n"\\é'), max_size=8)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=6,
)
RECORD = st.dictionaries(TRICKY, JSON_VALUE, min_size=1, max_size=4)


@given(st.lists(RECORD, max_size=5))
def test_pretty_items_cut_an_indented_array_into_its_objects(records) -> None:
    import json

    from dsh_query_server.cli.render import pretty_items

    text = json.dumps(records, indent=2, ensure_ascii=False).encode()
    items = pretty_items(text)
    assert [json.loads(item) for item in items] == records
    assert (b"[\n" + b",\n".join(items) + b"\n]" if items else b"[]") == text
