"""``sessionQuery/exportSession``'s params, the export options of the server configuration,
and the result (tools.md §2.4)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from .. import errors
from ..errors import QueryError
from ..model.params import Expect, Params, SessionId
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


def _absolute_paths(value: list[str] | None) -> bool:
    return value is None or all(v.startswith("/") for v in value)


class ExportParams(Params):
    """``outputPath`` is absolute. Absent or null: ``includeDescendants`` false,
    ``includeMedia`` true, ``overwrite`` false, no ``workspaceRoots`` (tools.md §2.4)."""

    # Each field's kind is checked in this order, then outputPath for being absolute (§2.6).
    sessionId: SessionId
    outputPath: Annotated[str, Expect("a string")]
    includeDescendants: Annotated[bool | None, Expect("a boolean")] = None
    includeMedia: Annotated[bool | None, Expect("a boolean")] = None
    overwrite: Annotated[bool | None, Expect("a boolean")] = None
    workspaceRoots: Annotated[
        list[str] | None, Expect("an array of absolute paths", check=_absolute_paths)
    ] = None

    def validate(self) -> None:
        if not self.outputPath.startswith("/"):
            raise QueryError(errors.INVALID_REQUEST, "outputPath must be an absolute path")


class ExportEntry(msgspec.Struct, omit_defaults=True):
    name: str
    bytes: int
    sessionId: str | None = None
    attachmentId: str | None = None


class ExportResult(msgspec.Struct):
    path: str
    bytes: int
    entries: list[ExportEntry]
