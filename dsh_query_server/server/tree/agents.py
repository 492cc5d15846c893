"""Which agent wrote a session, and its workspace, from the header alone (importers.md §0.8).

Imported headers carry ``source: {"agent", ...}``; dsh's own headers have no ``source`` and
mean agent ``dsh``. Only the listed header is read (no log load), so grouping a corpus by agent
or workspace costs one listing."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from ...model.event import Header

DSH = "dsh"
UNKNOWN = "unknown"  # a `source` without a usable `agent` string (never from our importers)

# Codicons per agent; dsh sessions keep the live/history/sub-agent icons of nodes.session_node.
AGENT_ICONS = {
    "claude-code": "sparkle",
    "codex": "robot",
    "gemini-cli": "star-full",
    "opencode": "terminal",
    "copilot-cli": "copilot",
    "qwen-code": "cloud",
}


class _SourceOnly(msgspec.Struct):
    source: object = None  # every other header key is skipped by the decoder


_DECODER = msgspec.json.Decoder(_SourceOnly)


def source_of(header: Header) -> object:
    """The header's ``source`` value as JSON (None when absent)."""
    try:
        return _DECODER.decode(header.raw).source
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def agent_of(header: Header, source: object = UNSET) -> str:
    if source is UNSET:
        source = source_of(header)
    if source is None:
        return DSH
    agent = source.get("agent") if isinstance(source, dict) else None
    return agent if isinstance(agent, str) and agent else UNKNOWN


def source_line(source: object, agent: str) -> str:
    """``claude-code 2.1.38 (subagent)``: the tooltip's account of where a session comes from."""
    if not isinstance(source, dict):
        return agent
    version, lineage = source.get("agentVersion"), source.get("lineage")
    text = agent + (f" {version}" if isinstance(version, str) and version else "")
    return text + (f" ({lineage})" if isinstance(lineage, str) and lineage else "")


def source_path(source: object) -> str | None:
    path = source.get("path") if isinstance(source, dict) else None
    return path if isinstance(path, str) and path else None


def workspace_of(header: Header) -> str | None:
    """The session's cwd, or None when it has none (a string cwd only: it is a header rule)."""
    cwd = header.cwd
    return cwd if cwd is not UNSET and isinstance(cwd, str) else None
