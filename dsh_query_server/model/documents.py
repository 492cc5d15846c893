"""The documents of semantics.md §1.2, §1.3 and §1.8 as the schema states them.

Results carry headers and events as ``msgspec.Raw`` (model/wire.py) and params take them as any
JSON value the live store validates (server/handlers/store.py): these structs say what those
values are, for the schema and the clients generated from it. Nothing decodes into them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from . import wire


class Doc(msgspec.Struct, omit_defaults=True, kw_only=True):
    pass


class SessionHeader(Doc):
    """semantics.md §1.2; unknown extra keys are kept and returned unchanged."""

    version: int
    id: str
    createdAt: int
    cwd: str | UnsetType = UNSET
    parentSession: str | UnsetType = UNSET
    seedLength: int | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegationDepth: int | UnsetType = UNSET
    agentPreset: str | UnsetType = UNSET


class SurfaceReplace(Doc):
    op: Literal["replace"]
    start: int
    end: int


class SessionEvent(Doc):
    """semantics.md §1.3; ``data`` is any JSON value, ``null`` included."""

    type: str
    seq: int
    time: int
    data: Any
    surfaceOp: Literal["append"] | SurfaceReplace | UnsetType = UNSET
    sourceEventSeqs: list[int] | UnsetType = UNSET
    ignorable: Literal[True] | UnsetType = UNSET


class SessionLineageNode(Doc):
    session: wire.SessionRecord
    descendants: list[SessionLineageNode]


class FallbackTitleSource(Doc, tag_field="kind", tag="fallback"):
    pass


class UserTitleSource(Doc, tag_field="kind", tag="user"):
    pass


class ProviderTitleSource(Doc, tag_field="kind", tag="provider"):
    provider: str
    model: dict[str, Any] | UnsetType = UNSET


TitleSource = FallbackTitleSource | UserTitleSource | ProviderTitleSource
