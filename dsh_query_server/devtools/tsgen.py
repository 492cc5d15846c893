"""TypeScript declarations of the wire protocol, generated from its JSON Schema.

``python -m dsh_query_server.devtools.tsgen`` rewrites vscode-extension/src/protocol.gen.ts;
``--check`` only reports whether the committed file is current. The emitter covers the subset of
JSON Schema that msgspec produces: $ref, type (also as a list), enum, const, properties with
required, items, additionalProperties, anyOf and oneOf.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .. import schema as wire_schema

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "vscode-extension" / "src" / "protocol.gen.ts"
HEADER = """\
// Generated from the protocol's JSON Schema (dsh_query_server/schema/) by
// `python -m dsh_query_server.devtools.tsgen`. Do not edit: change the schema and regenerate
// (tests/schema/test_schema.py fails while this file differs from what the generator writes).
"""
_PRIMITIVE = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}
_PRIMITIVE |= {"null": "null"}
_IDENT_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")

Schema = dict[str, Any]


def _ref_name(ref: str) -> str:
    prefix = "#/$defs/"
    if not ref.startswith(prefix):
        raise ValueError(f"unsupported $ref {ref!r}")
    return ref[len(prefix) :]


def _key(name: str) -> str:
    return name if name and not name[0].isdigit() and set(name) <= _IDENT_OK else json.dumps(name)


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return " | ".join(unique) if unique else "never"


def ts_type(s: Schema, indent: str = "", integer: str = "number") -> str:
    """The TypeScript type expression of one schema (``integer`` names JSON integers: the docs
    say ``integer`` where TypeScript can only say ``number``)."""
    if "$ref" in s:
        return _ref_name(s["$ref"])
    if "const" in s:
        return json.dumps(s["const"])
    if "enum" in s:
        return _union([json.dumps(v) for v in s["enum"]])
    for key in ("anyOf", "oneOf"):
        if key in s:
            return _union([ts_type(alt, indent, integer) for alt in s[key]])
    kind = s.get("type")
    if isinstance(kind, list):
        return _union([ts_type({**s, "type": k}, indent, integer) for k in kind])
    if kind == "integer":
        return integer
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    if kind == "array":
        item = ts_type(s["items"], indent, integer) if "items" in s else "unknown"
        return f"({item})[]" if " " in item and not item.startswith("{") else f"{item}[]"
    if kind == "object":
        if "properties" in s:
            return _object_body(s, indent, integer)
        extra = s.get("additionalProperties", True)
        value = "unknown" if extra is True or extra == {} else ts_type(extra, indent, integer)
        return f"{{ [key: string]: {value} }}"
    if kind is None and set(s) <= {"description"}:
        return "unknown"
    raise ValueError(f"unsupported schema {s!r}")


def _doc(text: str, indent: str) -> list[str]:
    return [f"{indent}/** {text.replace('*/', '* /')} */"]


def _object_body(s: Schema, indent: str, integer: str = "number") -> str:
    inner = indent + "  "
    required = set(s.get("required", ()))
    lines = ["{"]
    for name, prop in s["properties"].items():
        if "description" in prop:
            lines += _doc(prop["description"], inner)
        optional = "" if name in required else "?"
        lines.append(f"{inner}{_key(name)}{optional}: {ts_type(prop, inner, integer)};")
    extra = s.get("additionalProperties")
    if extra is True:
        lines.append(f"{inner}[key: string]: unknown;")
    elif isinstance(extra, dict):
        raise ValueError("typed additionalProperties beside properties is not supported")
    lines.append(indent + "}")
    return "\n".join(lines)


def declaration(name: str, s: Schema) -> str:
    lines = _doc(s["description"], "") if "description" in s else []
    if s.get("type") == "object" and "properties" in s:
        if s["properties"] or s.get("additionalProperties") is True:
            lines.append(f"export interface {name} {_object_body(s, '')}")
        else:  # an object with no keys (an empty params or result object)
            lines.append(f"export type {name} = Record<string, never>;")
    else:
        text = ts_type(s)
        if len(text) > 90 and " | " in text and "{" not in text:  # one member a line
            text = "".join(f"\n  | {part}" for part in text.split(" | "))
        lines.append(f"export type {name} ={'' if text.startswith(chr(10)) else ' '}{text};")
    return "\n".join(lines)


def generate(document: dict[str, Any] | None = None) -> str:
    doc = wire_schema.build() if document is None else document
    out = [HEADER]
    for name, s in doc["$defs"].items():
        out.append(declaration(name, s) + "\n")
    out.append(
        "/** Params and result of every request, by method name: `request()` is typed by it. */"
    )
    out.append("export interface Requests {")
    for method, m in doc["methods"].items():
        params, result = ts_type(m["params"], "  "), ts_type(m["result"], "  ")
        out.append(f"  {json.dumps(method)}: {{ params: {params}; result: {result} }};")
    out.append("}\n")
    out.append("/** Params of every notification, by method name. */")
    out.append("export interface NotificationMap {")
    for method, n in doc["notifications"].items():
        out.append(f"  {json.dumps(method)}: {ts_type(n['params'], '  ')};")
    out.append("}\n")
    out.append(f"export type ErrorDataShape = {ts_type(doc['errorData'])};\n")
    out.append("/** The JSON-RPC error number each coded failure is answered with. */")
    out.append("export const ERROR_RPC_CODES: Readonly<Record<ErrorCode, number>> = {")
    for code, number in doc["errorCodes"].items():
        out.append(f"  {code}: {number},")
    out.append("};\n")
    out.append("/** Server-side `workspace/executeCommand` ids and the request each one runs. */")
    out.append("export const SERVER_COMMANDS = {")
    for command, c in doc["commands"].items():
        out.append(f"  {json.dumps(command)}: {json.dumps(c['method'])},")
    out.append("} as const;")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = generate()
    if args == ["--check"]:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python -m dsh_query_server.devtools.tsgen")
            return 1
        return 0
    if args:
        print("usage: python -m dsh_query_server.devtools.tsgen [--check]", file=sys.stderr)
        return 2
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
