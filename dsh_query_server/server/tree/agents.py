"""Which agent wrote a session, and its workspace, from the header alone (importers.md §0.8).

Imported headers carry ``source: {"agent", ...}``; dsh's own headers have no ``source`` and
mean agent ``dsh``. Only the listed header is read (no log load), so grouping a corpus by agent
or workspace costs one listing."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from ...model.event import Header
from ...values import is_nonneg_safe_integer

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
COMPACTION_ICON = "fold"  # a compaction helper, whatever agent wrote it

# What a session is to its parent, as the trees say it (the word beside the icon).
SUB_AGENT = "sub-agent"
COMPACTION_HELPER = "compaction helper"
FORK = "fork"


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


def _seeded(header: Header) -> bool:
    seed = header.seed_length
    return is_nonneg_safe_integer(seed) and int(seed) > 0


def kin_of(header: Header, source: object) -> str | None:
    """``compaction helper`` (importers.md §0.8 ``lineage: "compaction"``: the model call that
    wrote a compaction's summary), ``sub-agent`` (``origin: "subagent"``), ``fork`` (an imported
    fork, or a dsh session seeded from its parent), or None."""
    lineage = source.get("lineage") if isinstance(source, dict) else None
    if lineage == "compaction":
        return COMPACTION_HELPER
    if header.origin == "subagent" or lineage == "subagent":
        return SUB_AGENT
    if header.parent_session is not UNSET and (lineage == "fork" or _seeded(header)):
        return FORK
    return None


def source_path(source: object) -> str | None:
    path = source.get("path") if isinstance(source, dict) else None
    return path if isinstance(path, str) and path else None


def workspace_of(header: Header) -> str | None:
    """The session's cwd, or None when it has none (a string cwd only: it is a header rule)."""
    cwd = header.cwd
    return cwd if cwd is not UNSET and isinstance(cwd, str) else None
