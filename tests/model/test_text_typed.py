"""extract_text's typed decode (the text types' payloads read into just the fields it needs) gives
exactly the text of the generic path (the payload decoded whole, then ``text_of``): on payloads
of every shape, well-formed or not, and on every event the real transcripts import to."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.model.text import TEXT_TYPES, extract_text, text_of
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.importing.emitter import JSONObject, _assembled
from tests.import_helpers import REAL


def generic(event: Event) -> str:
    return text_of(event.type, event.data()) if event.type in TEXT_TYPES else ""


# Scalars include a lone surrogate (msgspec refuses it: the generic path's fallback reads it).
scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.sampled_from(["text", "tool-call", "tool-result", " x ", "\ud800"]),
)  # fmt: skip
value = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["type", "text", "name", "arguments", "content", "message", "x"]),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
field = st.one_of(st.text(max_size=6), value)  # mostly text: the fields that contribute
block = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["text", "tool-call", "tool-result", "reasoning", "image"]),
        "text": field,
        "name": field,
        "arguments": field,
        "content": st.one_of(value, st.lists(st.dictionaries(st.just("type"), value))),
    },
)
blocks = st.one_of(
    st.lists(block, max_size=4), st.lists(st.one_of(block, value), max_size=4), value
)
message = st.one_of(
    st.fixed_dictionaries({"content": blocks}),
    st.fixed_dictionaries({}, optional={"content": blocks, "x": value}),
    value,
)
keys = {
    "content": blocks,
    "message": message,
    "name": field,
    "arguments": field,
    "error": st.one_of(st.fixed_dictionaries({}, optional={"name": field, "code": field}), value),
}
# Every key present (the usual shape), some of them, or no object at all.
payload = st.one_of(
    st.fixed_dictionaries(keys),
    st.fixed_dictionaries({}, optional={**keys, "import": value}),
    value,
)


@settings(max_examples=1000)
@given(payload)
def test_typed_extraction_equals_the_generic_path(data: Any) -> None:
    for etype in sorted(TEXT_TYPES):  # one payload under every type: each reads other keys
        event = make_event(etype, 0, 0, data)
        assert extract_text(event) == generic(event)


@settings(max_examples=300)
@given(payload, st.sampled_from(sorted(TEXT_TYPES)))
def test_members_around_the_payload_change_nothing(data: Any, etype: str) -> None:
    """The typed path decodes the whole event: members before and after ``data`` (a surface
    event's, an unknown one) are skipped, and the emitter's assembled events read the same."""
    body = make_event(etype, 0, 0, data).data_json
    for raw in (
        b'{"type":"%b","seq":0,"time":0,"data":%b,"surfaceOp":"append","sourceEventSeqs":[0]}',
        b'{"x":{"data":1},"type":"%b","seq":0,"time":0,"data":%b,"y":[{"data":2}]}',
    ):
        event = Event.from_json(raw % (etype.encode(), body))
        assert extract_text(event) == generic(event)
    value: JSONObject = {"type": etype, "data": data, "surfaceOp": "append"}
    assembled = _assembled(value, etype, 0, 0)
    if assembled is not None:  # None: a lone surrogate, which the emitter encodes otherwise
        assert extract_text(assembled) == generic(assembled)


def test_duplicate_keys_and_absent_data_agree() -> None:
    raw = b'{"type":"tool/call","seq":0,"time":0,"data":{"name":"a","name":"b","arguments":"c"}}'
    event = Event.from_json(raw)
    assert extract_text(event) == generic(event) == "b\nc"
    twice = b'{"type":"tool/call","seq":0,"time":0,"data":{"name":"a"},"data":{"name":"b"}}'
    event = Event.from_json(twice)
    assert extract_text(event) == generic(event) == "b"
    bare = Event.from_json(b'{"type":"user/message","seq":0,"time":0}')
    assert extract_text(bare) == generic(bare) == ""


def test_real_transcripts_extract_alike(tmp_path) -> None:
    claude = tmp_path / "claude" / "projects" / "-p"
    claude.mkdir(parents=True)
    for src in (REAL / "claude-code").glob("*.jsonl"):
        (claude / src.name).write_bytes(src.read_bytes())
    codex = tmp_path / "codex" / "sessions" / "2026" / "01" / "01"
    codex.mkdir(parents=True)
    for src in (REAL / "codex").glob("*.jsonl"):
        (codex / ("rollout-2026-01-01T00-00-00-" + src.stem[-36:] + ".jsonl")).write_bytes(
            src.read_bytes()
        )
    texts = 0
    for backend in (
        ClaudeBackend(str(tmp_path / "claude"), "claude:" + str(tmp_path / "claude")),
        CodexBackend(str(tmp_path / "codex"), "codex:" + str(tmp_path / "codex")),
    ):
        for header in backend.list(NULL_TOKEN):
            for event in backend.inspect(header.id, NULL_TOKEN).events:
                assert extract_text(event) == generic(event)
                texts += extract_text(event) != ""
    assert texts > 100
