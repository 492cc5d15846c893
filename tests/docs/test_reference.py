"""docs/reference.md against the server: its generated part is current, and every example in it
is a real answer that conforms to the schema (devtools/examples.py runs the real server)."""

from __future__ import annotations

import pytest

from dsh_query_server import schema
from dsh_query_server.devtools import conform, examples, refgen

pytestmark = pytest.mark.wire  # the examples are answers of a real server process


@pytest.fixture(scope="module")
def document() -> dict:
    return schema.build()


@pytest.fixture(scope="module")
def answers() -> list[examples.Example]:
    return examples.run()


def test_every_answer_conforms_to_its_method_schema(document, answers):
    defs = document["$defs"]
    for example in answers:
        method = document["methods"][example.method]
        if example.error is None:
            assert conform.problems(example.params, method["params"], defs) == [], example
            assert conform.problems(example.result, method["result"], defs) == [], example
            continue
        data = example.error["data"]
        assert conform.problems(data, document["errorData"], defs) == [], example
        listed = {e["code"]: e["rpcCode"] for e in method["errors"]}
        assert listed.get(data["code"]) == example.error["code"], example


def test_every_method_has_an_example(document, answers):
    found = examples.by_method(answers)
    assert set(document["methods"]) == {m for m, (ok, _) in found.items() if ok is not None}


def test_the_reference_is_current(document, answers):
    found = examples.by_method(answers)
    current = refgen.REFERENCE.read_text(encoding="utf-8")
    want = refgen.render(current, refgen.generate_section(document, found))
    assert current == want, (
        "docs/reference.md is out of date: run python -m dsh_query_server.devtools.refgen"
    )


def test_conform_finds_what_a_schema_forbids(document):
    defs = document["$defs"]
    record = {"header": {"version": 0, "id": "s", "createdAt": 0}, "live": True, "persisted": False}
    ref = {"$ref": "#/$defs/SessionRecord"}
    assert conform.problems(record, ref, defs) == []
    assert conform.problems({**record, "extra": 1}, ref, defs) == ["$: unexpected key extra"]
    assert conform.problems({**record, "live": 1}, ref, defs) == [
        "$.live: expected boolean, got int"
    ]
    header = {**record["header"], "custom": [1]}  # headers keep unknown keys
    assert conform.problems({**record, "header": header}, ref, defs) == []
    missing = {"live": True, "persisted": True}
    assert conform.problems(missing, ref, defs) == ["$: missing header"]
    event = {"sessionId": "s", "seq": 0, "type": "t", "time": 0, "surface": "gone"}
    problems = conform.problems(event, {"$ref": "#/$defs/SessionEventRecord"}, defs)
    assert problems == ["$.surface: 'gone' is not one of ['current', 'log-only', 'shadowed']"]
    assert conform.problems(True, {"type": "integer"}, defs) != []
