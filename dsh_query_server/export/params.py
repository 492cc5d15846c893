"""``sessionQuery/exportSession``'s params, the export options of the server configuration,
and the result (tools.md §2.4)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import msgspec

from .. import errors
from ..errors import QueryError
from ..values import is_integer


@dataclass(frozen=True, slots=True)
class ExportOptions:
    attachments: str | None  # the attachment store, or None for no store
    level: int  # DEFLATE level 0-9


def export_options(raw: dict[str, Any]) -> ExportOptions:
    """The keys ``attachments`` and ``sessionExportCompressionLevel`` (INVALID_CONFIG)."""
    level = raw.get("sessionExportCompressionLevel", 6)
    if not (is_integer(level) and 0 <= level <= 9):
        raise QueryError(
            errors.INVALID_CONFIG,
            "session-query: sessionExportCompressionLevel must be an integer 0-9",
        )
    if "attachments" in raw:
        store = raw["attachments"]
        if store is not None and not isinstance(store, str):
            raise QueryError(errors.INVALID_CONFIG, "session-query: attachments must be a string")
    else:
        home = os.environ.get("DSH_HOME") or os.path.join(os.path.expanduser("~"), ".dsh")
        store = os.path.join(home, "attachments", "v1")
    return ExportOptions(store, int(level))


class ExportParams(msgspec.Struct, forbid_unknown_fields=False):
    sessionId: str
    outputPath: str
    includeDescendants: bool = False
    includeMedia: bool = True
    overwrite: bool = False
    workspaceRoots: list[str] | None = None


class ExportEntry(msgspec.Struct, omit_defaults=True):
    name: str
    bytes: int
    sessionId: str | None = None
    attachmentId: str | None = None


class ExportResult(msgspec.Struct):
    path: str
    bytes: int
    entries: list[ExportEntry]


_KINDS = {
    "sessionId": "a string",
    "outputPath": "a string",
    "includeDescendants": "a boolean",
    "includeMedia": "a boolean",
    "overwrite": "a boolean",
    "workspaceRoots": "an array of absolute paths",
}


def parse_params(params: Any) -> ExportParams:
    """−32602 INVALID_REQUEST: ``<field> must be <kind>`` or a relative outputPath."""
    if not isinstance(params, dict):
        raise QueryError(errors.INVALID_REQUEST, "params must be an object")
    for name, kind in _KINDS.items():
        value = params.get(name)
        required = name in ("sessionId", "outputPath")
        if value is None and not required:
            continue
        if kind == "a string":
            ok = isinstance(value, str)
        elif kind == "a boolean":
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, list) and all(
                isinstance(v, str) and v.startswith("/") for v in value
            )
        if not ok:
            raise QueryError(errors.INVALID_REQUEST, f"{name} must be {kind}")
    if not params["outputPath"].startswith("/"):
        raise QueryError(errors.INVALID_REQUEST, "outputPath must be an absolute path")
    return msgspec.convert(
        {k: v for k, v in params.items() if k in _KINDS and v is not None}, ExportParams
    )
