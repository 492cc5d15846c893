"""The protocol's JSON Schema (dsh_query_server/schema/) and what is generated from it.

The schema is built from the msgspec structs the server encodes and the method table; the
extension's protocol.gen.ts and the shape sections of docs/reference.md are generated from it and
must be regenerated when it changes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from dsh_query_server import errors, schema
from dsh_query_server.devtools import tsgen
from dsh_query_server.hub.methods import METHODS
from dsh_query_server.server.methods import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def document() -> dict:
    return schema.build()


def test_every_method_of_the_table_has_params_result_and_errors(document):
    """Every method a connection can be answered: the server's and a hub's own (hub/methods.py)."""
    assert set(document["methods"]) == set(METHODS)
    for name, method in document["methods"].items():
        assert method["params"] and method["result"], name
        codes = [e["code"] for e in method["errors"]]
        assert codes[-1] == errors.INTERNAL, name
        assert len(codes) == len(set(codes)), name


def test_error_numbers_follow_the_protocol(document):
    # protocol.md §2: validation codes are -32602, cancellation -32800, a bug -32603, else -32803.
    numbers = document["errorCodes"]
    assert numbers[errors.ABORTED] == -32800
    assert numbers[errors.INTERNAL] == -32603
    for code in errors.VALIDATION_CODES:
        assert numbers[code] == -32602, code
    assert numbers[errors.SESSION_NOT_FOUND] == numbers[errors.STORE_READ_ONLY] == -32803
    enum = document["$defs"]["ErrorCode"]["enum"]
    assert sorted(enum) == sorted(numbers)
    for method in document["methods"].values():
        for entry in method["errors"]:
            assert entry["rpcCode"] == numbers[entry["code"]]


def test_refs_resolve_and_raw_fields_are_typed(document):
    text = json.dumps(document)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/$defs/')[1:]}:
        assert ref in document["$defs"], ref
    # A Raw field would render as {} (any JSON): every one says what it holds.
    record = document["$defs"]["SessionRecord"]["properties"]
    assert record["header"] == {"$ref": "#/$defs/SessionHeader"}
    window = document["$defs"]["SessionEventWindow"]["properties"]
    assert window["events"] == {"type": "array", "items": {"$ref": "#/$defs/SessionEvent"}}
    assert document["$defs"]["SessionHeader"]["additionalProperties"] is True


def test_a_raw_field_without_a_meaning_is_refused(monkeypatch):
    monkeypatch.delitem(schema.RAW_FIELDS, ("SessionRecord", "header"))
    with pytest.raises(ValueError, match="SessionRecord.header is Raw"):
        schema.build()


def test_a_field_type_for_a_missing_field_is_refused(monkeypatch):
    monkeypatch.setitem(schema.FIELD_TYPES, ("SessionRecord", "nope"), str)
    with pytest.raises(ValueError, match="no field nope"):
        schema.build()


def test_commands_name_their_requests(document):
    assert set(document["commands"]) == set(COMMANDS)
    assert document["commands"]["dshQuery.server.mount"] == {"method": "sessionPersistence/mount"}


def test_a_struct_and_its_schema_agree_on_required_keys(document):
    # The struct behind a result and the schema agree on required keys: encode a real struct
    # and check it against the schema's required list.
    from dsh_query_server.model.wire import SessionRecord

    record = SessionRecord(msgspec.Raw(b'{"version":0}'), True, False)
    value = json.loads(msgspec.json.encode(record))
    required = document["$defs"]["SessionRecord"]["required"]
    assert sorted(required) == sorted(value)


def test_main_prints_the_schema_as_json():
    command = [sys.executable, "-m", "dsh_query_server.schema"]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == schema.build()
    assert schema.main(["--bogus"]) == 2


def test_generated_typescript_is_current():
    committed = tsgen.OUTPUT.read_text(encoding="utf-8")
    assert committed == tsgen.generate(), (
        "vscode-extension/src/protocol.gen.ts is out of date: "
        "run .venv/bin/python -m dsh_query_server.devtools.tsgen"
    )


def test_generated_typescript_names_every_definition_and_method(document):
    text = tsgen.generate(document)
    for name in document["$defs"]:
        assert f"export interface {name} " in text or f"export type {name} =" in text, name
    for method in document["methods"]:
        assert f'  "{method}": {{ params: ' in text, method


def test_typescript_of_schema_shapes():
    obj = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b-c": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "d": {"type": "array", "items": {"enum": ["x", "y"]}},
            "e": {"type": "object", "additionalProperties": {"$ref": "#/$defs/T"}},
            "f": {},
        },
        "required": ["a", "f"],
        "additionalProperties": True,
    }
    assert tsgen.declaration("X", obj).splitlines() == [
        "export interface X {",
        "  a: string;",
        '  "b-c"?: number | null;',
        '  d?: ("x" | "y")[];',
        "  e?: { [key: string]: T };",
        "  f: unknown;",
        "  [key: string]: unknown;",
        "}",
    ]
    empty = {"type": "object", "properties": {}, "required": []}
    assert tsgen.declaration("E", empty) == "export type E = Record<string, never>;"
    with pytest.raises(ValueError, match="unsupported"):
        tsgen.ts_type({"$ref": "other.json#/x"})
