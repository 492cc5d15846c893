"""The ``sessions`` filters: ``--agent``, ``--cwd`` and ``--since``, applied to listed headers."""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Callable
from typing import Any

_DURATION = re.compile(r"(\d+)([mhdw])")
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def since_ms(text: str, now_ms: int | None = None) -> int:
    """``--since``: a duration back from now (``30m``, ``12h``, ``7d``, ``2w``) or an ISO date or
    date-time (UTC when it names no zone); milliseconds since the epoch."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    match = _DURATION.fullmatch(text.strip())
    if match:
        return now - int(match.group(1)) * _UNIT_MS[match.group(2)]
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'--since takes a duration (30m, 12h, 7d, 2w) or an ISO date, got "{text}"'
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _agent_matches(agent: str, wanted: str) -> bool:
    # A URI scheme names its agent: `claude` claude-code, `gemini` gemini-cli, `qwen` qwen-code.
    return agent == wanted or agent.startswith(wanted + "-")


def session_filter(
    agents: list[str] | None, cwd: str | None, since: int | None
) -> Callable[[dict[str, Any]], bool] | None:
    """A header predicate for the given filters, or None when there are none."""
    if not agents and cwd is None and since is None:
        return None
    from .render import agent_of

    root = os.path.abspath(cwd) if cwd is not None else None

    def keep(header: dict[str, Any]) -> bool:
        if agents and not any(_agent_matches(agent_of(header), a) for a in agents):
            return False
        if root is not None:
            value = header.get("cwd")
            if not isinstance(value, str) or not (
                value == root or value.startswith(root.rstrip("/") + "/")
            ):
                return False
        created = header.get("createdAt")
        return since is None or (isinstance(created, (int, float)) and created >= since)

    return keep


SURFACES = ("current", "shadowed", "log-only")


def event_filter(
    types: list[str] | None, skip_types: list[str] | None, classes: list[str] | None
) -> tuple[Callable[[dict[str, Any]], bool] | None, str]:
    """An event-record predicate for ``--type``, ``--skip-type`` (shell-style patterns such as
    ``tool/*``) and ``--class``, and the same filters in words for a heading; (None, "") for
    none."""
    from fnmatch import fnmatchcase

    if not types and not skip_types and not classes:
        return None, ""

    def keep(record: dict[str, Any]) -> bool:
        kind = str(record.get("type"))
        if types and not any(fnmatchcase(kind, t) for t in types):
            return False
        if skip_types and any(fnmatchcase(kind, t) for t in skip_types):
            return False
        return not classes or record.get("surface") in classes

    said = [
        *(f"--type {t}" for t in types or []),
        *(f"--skip-type {t}" for t in skip_types or []),
        *(f"--class {c}" for c in classes or []),
    ]
    return keep, " ".join(said)


__all__ = ["SURFACES", "event_filter", "session_filter", "since_ms"]
