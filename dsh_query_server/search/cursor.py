"""Search cursors (semantics.md §6.11): wire format, canonical request fingerprints, decoding.

A cursor binds the service instance, the scope, the normalized request and the generation of the
corpus it paged. Identity is checked before the generation, so a cursor that belongs to another
request or instance is INVALID even when its corpus also changed; only a cursor that is right
in every other respect can be STALE.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any

from msgspec import UNSET

from .. import errors, jsoncodec
from ..errors import QueryError
from ..model.filters import _List, kind_of
from ..values import is_integer, is_safe_integer

VERSION = 1
SESSIONS = "sessions"
EVENTS = "events"

# base64url, with or without its padding.
_CURSOR_TEXT = re.compile(r"([A-Za-z0-9_-]*)(={0,2})")


def _text(value: Any) -> str:
    return jsoncodec.dumps(value).decode("utf-8")


def _number(value: Any) -> Any:
    # 3.0 and 3 name the same bound, so they give the same fingerprint.
    if value is UNSET:
        return None
    return int(value) if is_integer(value) else value


def _canonical_filters(clauses: Iterable[Any]) -> list[Any]:
    out = []
    for clause in clauses:
        if isinstance(clause, _List):
            values = sorted(clause.values, key=lambda v: (v is not None, v or ""))
            out.append({"kind": kind_of(clause), "values": values})
        else:
            out.append(
                {"kind": kind_of(clause), "from": _number(clause.lo), "to": _number(clause.hi)}
            )
    return sorted(out, key=_text)


def sessions_fingerprint(
    query: str, session_filters: Iterable[Any], event_filters: Iterable[Any], limit: int
) -> str:
    return _text(
        {
            "scope": SESSIONS,
            "query": query,
            "sessionFilters": _canonical_filters(session_filters),
            "eventFilters": _canonical_filters(event_filters),
            "limit": limit,
        }
    )


def events_fingerprint(session_id: str, query: str, filters: Iterable[Any], limit: int) -> str:
    return _text(
        {
            "scope": EVENTS,
            "sessionId": session_id,
            "query": query,
            "filters": _canonical_filters(filters),
            "limit": limit,
        }
    )


def encode_cursor(instance: str, scope: str, fingerprint: str, generation: str, offset: int) -> str:
    body = jsoncodec.dumps(
        {
            "version": VERSION,
            "instance": instance,
            "scope": scope,
            "fingerprint": fingerprint,
            "generation": generation,
            "offset": offset,
        }
    )
    return base64.urlsafe_b64encode(body).rstrip(b"=").decode("ascii")


def invalid_cursor() -> QueryError:
    return QueryError(errors.INVALID_CURSOR, "session-search cursor is invalid")


def _payload(text: str) -> dict[str, Any]:
    match = _CURSOR_TEXT.fullmatch(text)
    if match is None:
        raise invalid_cursor()
    body, padding = match.groups()
    missing = -len(body) % 4
    if missing == 3 or (padding and len(padding) != missing):
        raise invalid_cursor()
    try:
        value = jsoncodec.loads(base64.urlsafe_b64decode(body + "=" * missing).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, jsoncodec.JSONDecodeError):
        raise invalid_cursor() from None
    if not isinstance(value, dict):
        raise invalid_cursor()
    return value


def decode_cursor(
    text: str, *, instance: str, scope: str, fingerprint: str, generation: str
) -> int:
    """The cursor's offset; INVALID_CURSOR unless it is ours for exactly this request, then
    STALE_CURSOR when its generation is not the current one."""
    value = _payload(text)
    version = value.get("version")
    offset = value.get("offset", -1)  # missing: invalid, as a negative offset is
    if not (
        is_integer(version)
        and version == VERSION
        and _same_text(value.get("instance"), instance)
        and _same_text(value.get("scope"), scope)
        and _same_text(value.get("fingerprint"), fingerprint)
        and is_safe_integer(offset)
        and offset >= 0
    ):
        raise invalid_cursor()
    if not _same_text(value.get("generation"), generation):
        raise QueryError(
            errors.STALE_CURSOR,
            "session-search cursor is stale because its relevant corpus changed",
        )
    return int(offset)


def _same_text(value: Any, expected: str) -> bool:
    return isinstance(value, str) and value == expected
