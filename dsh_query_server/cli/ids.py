"""Session ids as people type them: shown as their shortest unique prefix and accepted as input
wherever an id is (as git shows and takes hashes).

Only ids that start with a UUID (dsh, Claude Code and Codex sessions) are shortened, to a prefix
of at least ``MIN_PREFIX`` characters (git shows 7; UUIDv7 ids of sessions started the same day
share their first hex digits, so a shorter floor would change meaning with every new session).
Names people chose (``fix-flaky-tests``) and ids whose unique prefix would run past the UUID (a
sub-agent ``<uuid>/agent-…`` next to its parent) are shown whole. Input takes any unique prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MIN_PREFIX = 8
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class AmbiguousId(Exception):
    """A prefix that more than one session id starts with."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        shown = "\n".join(f"  {c}" for c in candidates[:10])
        more = f"\n  … and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        super().__init__(
            f'session id prefix "{prefix}" is ambiguous; it matches {len(candidates)} '
            f"sessions:\n{shown}{more}"
        )
        self.candidates = candidates


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """Each id's shortest prefix (at least MIN_PREFIX characters) that no other id starts with."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for i, sid in enumerate(ordered):
        shared = max(
            _common(sid, ordered[i - 1]) if i else 0,
            _common(sid, ordered[i + 1]) if i + 1 < len(ordered) else 0,
        )
        length = max(MIN_PREFIX, shared + 1)
        out[sid] = sid[:length] if _UUID.match(sid) and length <= 36 else sid
    return out


def resolve_id(text: str, ids: Iterable[str]) -> str:
    """An exact id wins; else the one id ``text`` starts; several raise AmbiguousId; none leaves
    ``text`` as it is, so the server answers its usual not-found."""
    candidates: list[str] = []
    for sid in ids:
        if sid == text:
            return sid
        if sid.startswith(text):
            candidates.append(sid)
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise AmbiguousId(text, sorted(candidates))
    return text


__all__ = ["MIN_PREFIX", "AmbiguousId", "resolve_id", "short_ids"]
