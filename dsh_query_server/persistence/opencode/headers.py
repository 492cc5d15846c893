"""Headers of OpenCode sessions (importers.md §8.2), from session records alone."""

from __future__ import annotations

from ...model.event import Header
from ..importing.emitter import JSONObject
from ..importing.values import MAX_SAFE
from .emitter import PLUGIN
from .rows import Session


def depth_of(parents: dict[str, str | None], sid: str) -> int:
    """Parent links followed from ``sid`` until a root, an unknown parent or a cycle."""
    depth, seen, cur = 0, {sid}, parents.get(sid)
    while cur is not None:
        depth += 1
        if cur in seen or cur not in parents:
            break
        seen.add(cur)
        cur = parents[cur]
    return depth


def parents_of(sessions: list[Session]) -> dict[str, str | None]:
    return {s.id: s.parent for s in sessions}


def header_of(
    session: Session, path: str, depth: int, approximate: list[str] | None = None
) -> Header:
    value: JSONObject = {
        "version": 0,
        "id": session.id,
        "createdAt": min(max(session.created, 0), MAX_SAFE),
    }
    if session.directory is not None and session.directory.startswith("/"):
        value["cwd"] = session.directory
    source: JSONObject = {"agent": PLUGIN}
    if session.version is not None:
        source["agentVersion"] = session.version
    source["path"] = path
    if session.parent is not None and session.parent != session.id:
        value["parentSession"] = session.parent
        value["origin"] = "subagent"
        value["delegationDepth"] = max(depth, 1)
        if session.agent is not None:
            value["agentPreset"] = session.agent
        source["lineage"] = "subagent"
    reasons = list(approximate or [])
    if session.directory is not None and not session.directory.startswith("/"):
        reasons.insert(0, "cwd-not-absolute")
    if approximate is not None and reasons:
        source["approximate"] = reasons
    value["source"] = source
    return Header.from_value(value)
