"""Session ids as people type them: shown short and accepted as input wherever an id is (as git
shows and takes hashes).

- An id that starts with a UUID (dsh, Claude Code and Codex sessions) shows as its shortest
  prefix of at least ``MIN_PREFIX`` characters that resolves back to it (git shows 7; UUIDv7 ids
  of sessions started the same day share their first hex digits, so a shorter floor would change
  meaning with every new session).
- A Claude sub-agent ``<uuid>/agent-<a>`` shows as ``<uuid prefix>…/agent-<a prefix>``: the
  shortest prefix of its UUID that only this family shares, then the shortest part of the rest
  that tells it from its siblings (at least ``MIN_AGENT`` characters of the agent name). That
  form is accepted as input too, so a shown id can always be pasted back.
- Names people chose (``fix-flaky-tests``) show whole.

Input takes an exact id, a shown form, or any prefix. A prefix that several ids start with
resolves to the one of them every other one descends from (a parent over its own sub-agents,
by the headers' ``parentSession``): the parent's short prefix is shared by its sub-agents, whose
ids start with the parent's, and it still names the parent.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping

MIN_PREFIX = 8
MIN_AGENT = 4
ELLIPSIS = "…"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_UUID_LEN = 36
_AGENT = "/agent-"

# id -> its header's parentSession (absent or None: no parent)
Parents = Mapping[str, str | None]


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


def _descends(sid: str, ancestor: str, parents: Parents) -> bool:
    """Whether ``ancestor`` is on ``sid``'s parent chain (a cycle ends the walk)."""
    seen = {sid}
    walk = parents.get(sid)
    while walk is not None and walk not in seen:
        if walk == ancestor:
            return True
        seen.add(walk)
        walk = parents.get(walk)
    return False


def _below(sid: str, ancestor: str, parents: Parents) -> bool:
    """``sid`` descends from ``ancestor`` and not the other way round (a cycle of parent links
    puts neither below the other)."""
    return _descends(sid, ancestor, parents) and not _descends(ancestor, sid, parents)


def _root_of(candidates: list[str], parents: Parents) -> str | None:
    """The one candidate every other candidate descends from, if there is one."""
    roots = [c for c in candidates if all(o == c or _below(o, c, parents) for o in candidates)]
    return roots[0] if len(roots) == 1 else None


def _family(sid: str) -> tuple[str, str] | None:
    """``(uuid, rest)`` for a sub-agent-shaped id ``<uuid>/…``; None for any other id."""
    if len(sid) > _UUID_LEN and sid[_UUID_LEN] == "/" and _UUID.match(sid):
        return sid[:_UUID_LEN], sid[_UUID_LEN:]
    return None


def _matches(text: str, ids: Iterable[str]) -> list[str]:
    """Ids ``text`` names: by prefix, or in the shown ``<uuid prefix>…<rest prefix>`` form."""
    head, sep, tail = text.partition(ELLIPSIS)
    if not sep:
        return [sid for sid in ids if sid.startswith(text)]
    out = []
    for sid in ids:
        family = _family(sid)
        if family is not None and family[0].startswith(head) and family[1].startswith(tail):
            out.append(sid)
    return out


def resolve_id(text: str, ids: Iterable[str], parents: Parents | None = None) -> str:
    """An exact id wins; else the one id ``text`` names, or the one all the others descend from;
    several raise AmbiguousId; none leaves ``text`` as it is, so the server answers its usual
    not-found."""
    listed = list(ids)
    if text in listed:
        return text
    candidates = _matches(text, listed)
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        root = _root_of(candidates, parents or {})
        if root is not None:
            return root
        raise AmbiguousId(text, sorted(candidates))
    return text


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _uuid_prefix(sid: str, ordered: list[str], index: int, parents: Parents) -> str:
    """The shortest prefix (at least MIN_PREFIX) that resolves to ``sid``: every other id that
    starts with it descends from ``sid``; the whole id when none does."""
    # In sorted order the common prefix with sid only shrinks moving away from it, so the
    # nearest id on each side that does not descend from sid shares the most with it.
    shared = 0
    for step in (-1, 1):
        j = index + step
        while 0 <= j < len(ordered) and _below(ordered[j], sid, parents):
            j += step
        if 0 <= j < len(ordered):
            shared = max(shared, _common(sid, ordered[j]))
    length = max(MIN_PREFIX, shared + 1)
    return sid[:length] if length <= _UUID_LEN else sid


def _outside(uuid: str, ordered: list[str]) -> int:
    """How much of ``uuid`` the nearest ids that do not start with it share (its family sorts
    as one run, so only the ids around that run count)."""
    first = bisect.bisect_left(ordered, uuid)
    last = bisect.bisect_left(ordered, uuid + "\U0010ffff")
    around = ordered[first - 1 : first] if first else []
    around += ordered[last : last + 1]
    return max((_common(uuid, o) for o in around), default=0)


def _agent_part(rest: str, siblings: list[str]) -> str | None:
    """The shortest prefix of ``rest`` that no sibling's rest starts with, and at least up to
    MIN_AGENT characters of the agent's name; None when every prefix is shared (a sibling's
    rest starts with the whole of this one)."""
    cut = rest.rfind(_AGENT)
    floor = (cut + len(_AGENT) + MIN_AGENT) if cut >= 0 else MIN_AGENT + 1
    others = [s for s in siblings if s != rest]
    if any(s.startswith(rest) for s in others):
        return None
    shared = max((_common(rest, s) for s in others), default=0)
    return rest[: max(floor, shared + 1)]


def short_ids(ids: Iterable[str], parents: Parents | None = None) -> dict[str, str]:
    """Each id as it is shown (see the module docstring); every shown form resolves back to its
    id with ``resolve_id`` over the same ids and parents."""
    links = parents or {}
    ordered = sorted(set(ids))
    families: dict[str, list[str]] = {}
    for sid in ordered:
        family = _family(sid)
        if family is not None:
            families.setdefault(family[0], []).append(family[1])
    out: dict[str, str] = {}
    for i, sid in enumerate(ordered):
        family = _family(sid)
        if family is None:
            out[sid] = _uuid_prefix(sid, ordered, i, links) if _UUID.match(sid) else sid
            continue
        uuid, rest = family
        # The UUID prefix must leave out every id not of this family (the bare parent is told
        # apart by the ellipsis form, which only ids with a rest match).
        head = uuid[: max(MIN_PREFIX, _outside(uuid, ordered) + 1)]
        tail = _agent_part(rest, families[uuid])
        shown = sid if tail is None else head + ELLIPSIS + tail
        out[sid] = shown if len(shown) < len(sid) else sid
    return out


def parents_of(records: Iterable[dict[str, object]]) -> dict[str, str | None]:
    """id -> parentSession, from ``listSessions`` records."""
    out: dict[str, str | None] = {}
    for record in records:
        header = record.get("header")
        if isinstance(header, dict):
            sid = header.get("id")  # pyright: ignore[reportUnknownMemberType]
            parent = header.get("parentSession")  # pyright: ignore[reportUnknownMemberType]
            if isinstance(sid, str):
                out[sid] = parent if isinstance(parent, str) else None
    return out


__all__ = ["ELLIPSIS", "MIN_PREFIX", "AmbiguousId", "parents_of", "resolve_id", "short_ids"]
