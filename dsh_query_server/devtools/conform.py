"""Check a JSON value against the protocol's schema (the subset msgspec emits).

Used by the tests to hold real server answers to the schema. Stricter than JSON Schema in one way:
an object schema with properties admits no other key unless it says ``additionalProperties:
true``, because results carry exactly their declared keys (semantics.md §1.8), so a key the
schema forgot is found. Returns the problems, each as ``path: what``; empty means it conforms.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def _kind_ok(kind: str, value: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown JSON Schema type {kind!r}")


def problems(value: Any, s: Schema, defs: dict[str, Schema], path: str = "$") -> list[str]:
    if "$ref" in s:
        return problems(value, defs[s["$ref"].rsplit("/", 1)[-1]], defs, path)
    if "enum" in s and value not in s["enum"]:
        return [f"{path}: {value!r} is not one of {s['enum']}"]
    for key in ("anyOf", "oneOf"):
        if key in s:
            fits = [alt for alt in s[key] if not problems(value, alt, defs, path)]
            if not fits or (key == "oneOf" and len(fits) > 1):
                return [f"{path}: {value!r} matches {len(fits)} of the {key} alternatives"]
    kind = s.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds and not any(_kind_ok(k, value) for k in kinds):
        return [f"{path}: expected {'/'.join(kinds)}, got {type(value).__name__}"]
    found: list[str] = []
    if isinstance(value, list) and "items" in s:
        for i, item in enumerate(value):
            found += problems(item, s["items"], defs, f"{path}[{i}]")
    if isinstance(value, dict):
        obj: dict[str, Any] = value
        props: dict[str, Schema] | None = s.get("properties")
        extra = s.get("additionalProperties")
        found += [f"{path}: missing {k}" for k in s.get("required", ()) if k not in obj]
        for key, item in obj.items():
            if props is not None and key in props:
                found += problems(item, props[key], defs, f"{path}.{key}")
            elif isinstance(extra, dict) and extra:
                found += problems(item, extra, defs, f"{path}.{key}")
            elif props is not None and extra is not True:
                found.append(f"{path}: unexpected key {key}")
    return found
