"""The JSON Schema of the wire protocol: every method's params, result and error data.

Built from the method registry (server/registry.py): every method a hub's connection answers
(hub/methods.py: the server's table, server/methods.py, and the hub's own ``hub/*``, which a
private server answers -32601), each with its params struct, result type, error codes and summary
(its handler's docstring), and from the structs they reach. What the structs cannot say is added here, each checked against the structs when the
schema is built:

- what a ``msgspec.Raw`` field holds (a header, an event, lineage nodes: ``RAW_FIELDS``);
- the type the spec promises for a result field the struct passes through untyped
  (``FIELD_TYPES``); a field that states it itself (``Spec``, model/params.py: the lenient params
  fields) needs no entry.

The additions live in shapes.py.

``python -m dsh_query_server.schema`` (``dsh-query schema``) prints it; the extension's
protocol types and docs/reference.md are generated from it (dsh_query_server/devtools/).
"""

from __future__ import annotations

import json
import sys
import typing
from typing import Any

import msgspec
from msgspec import Raw

from .. import errors
from ..errors import QueryError
from ..hub.methods import METHODS
from ..model.params import spec_of
from ..server.app import to_rpc_error
from ..server.methods import COMMANDS
from .shapes import FIELD_TYPES, NAMED_UNIONS, NOTIFICATIONS, OPEN_OBJECTS, RAW_FIELDS, ErrorData
from .shapes import codes as error_codes

__all__ = ["FIELD_TYPES", "RAW_FIELDS", "build", "dumps", "main"]

SCHEMA_VERSION = 1
_REF = "#/$defs/{name}"
E = errors


def rpc_code(code: str) -> int:
    """The JSON-RPC error number the server answers a coded failure with."""
    return to_rpc_error(QueryError(code, "")).code


def _walk_structs(tp: object, out: dict[str, type[msgspec.Struct]]) -> None:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if tp.__name__ in out:
            if out[tp.__name__] is not tp:
                raise ValueError(f"two structs are named {tp.__name__}")
            return
        out[tp.__name__] = tp
        for field in msgspec.structs.fields(tp):
            _walk_structs(field.type, out)
        return
    for arg in typing.get_args(tp):
        _walk_structs(arg, out)


def _holds_raw(tp: object) -> bool:
    return tp is Raw or any(_holds_raw(a) for a in typing.get_args(tp))


def _wire_name(cls: type[msgspec.Struct], name: str) -> str:
    fields = {f.name: f.encode_name for f in msgspec.structs.fields(cls)}
    if name not in fields:
        raise ValueError(f"{cls.__name__} has no field {name}")
    return fields[name]


def _name_unions(node: Any, named: dict[str, Any]) -> Any:
    for name, union in named.items():
        if node == union:
            return {"$ref": _REF.format(name=name)}
    if isinstance(node, dict):
        return {k: _name_unions(v, named) for k, v in node.items()}
    if isinstance(node, list):
        return [_name_unions(v, named) for v in node]
    return node


def _stated(structs: dict[str, type[msgspec.Struct]]) -> dict[tuple[str, str], object]:
    """(struct, field) -> the type a field states with ``Spec`` (model/params.py)."""
    return {
        (name, field.name): spec.type
        for name, cls in structs.items()
        for field in msgspec.structs.fields(cls)
        if (spec := spec_of(field.type)) is not None
    }


def build() -> dict[str, Any]:
    """The whole schema document (a JSON value)."""
    roots: list[object] = [ErrorData]
    for method in METHODS.values():
        roots += [method.params, method.result]
    roots += [params for params, _ in NOTIFICATIONS.values()]
    structs: dict[str, type[msgspec.Struct]] = {}
    for root in roots:
        _walk_structs(root, structs)
    # The added types reach more structs (a Raw header, a lenient field's filters), which may
    # state types of their own: walk until nothing new is reached.
    patches: dict[tuple[str, str], object] = {}
    while True:
        found = {**RAW_FIELDS, **FIELD_TYPES, **_stated(structs)}
        reached = {k: tp for k, tp in found.items() if k[0] in structs}
        if reached.keys() == patches.keys():
            break
        patches = reached
        for tp in patches.values():
            _walk_structs(tp, structs)
    for struct, field in {**RAW_FIELDS, **FIELD_TYPES}:
        if struct not in structs:
            raise ValueError(f"a field type names {struct}, which no method uses")
        _wire_name(structs[struct], field)
    for name, cls in structs.items():
        for field in msgspec.structs.fields(cls):
            if _holds_raw(field.type) and (name, field.name) not in RAW_FIELDS:
                raise ValueError(f"{name}.{field.name} is Raw: say what it holds in RAW_FIELDS")
    patch_types = list(patches.values())
    unions = list(NAMED_UNIONS.values())
    schemas, defs = msgspec.json.schema_components(roots + patch_types + unions, ref_template=_REF)
    named = dict(zip(NAMED_UNIONS, schemas[len(roots) + len(patch_types) :], strict=True))
    schemas = schemas[: len(roots) + len(patch_types)]
    for ((struct, field), _), schema in zip(patches.items(), schemas[len(roots) :], strict=True):
        props = defs[struct]["properties"]
        props[_wire_name(structs[struct], field)] = schema
    for name in OPEN_OBJECTS:
        defs[name]["additionalProperties"] = True
    for name, definition in defs.items():
        definition.pop("title", None)
        doc = structs[name].__doc__ if name in structs else None
        if doc and not doc.startswith(name + "("):  # msgspec's generated signature is no prose
            definition["description"] = " ".join(doc.split())
    schemas = [_name_unions(x, named) for x in schemas]
    defs = {name: _name_unions(x, named) for name, x in defs.items()}
    defs.update(named)
    methods: dict[str, Any] = {}
    it = iter(schemas[: len(roots)])
    error_data = next(it)
    for name, method in METHODS.items():
        answered = [*dict.fromkeys(method.errors), E.INTERNAL]
        methods[name] = {
            "summary": method.summary,
            "params": next(it),
            "result": next(it),
            "errors": [{"code": c, "rpcCode": rpc_code(c)} for c in answered],
        }
    notifications = {
        name: {"summary": summary, "params": next(it)}
        for name, (_, summary) in NOTIFICATIONS.items()
    }
    commands = {command: {"method": method.name} for command, method in COMMANDS.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh-query-server JSON-RPC protocol",
        "version": SCHEMA_VERSION,
        "methods": methods,
        "notifications": notifications,
        "commands": commands,
        "errorData": error_data,
        "errorCodes": {code: rpc_code(code) for code in error_codes()},
        "$defs": dict(sorted(defs.items())),
    }


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the schema as JSON (``dsh-query schema``)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        print("usage: dsh-query schema  (prints the protocol's JSON Schema)", file=sys.stderr)
        return 2
    sys.stdout.write(dumps(build()))
    return 0
