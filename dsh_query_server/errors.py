"""The closed set of coded failures (semantics.md §7, protocol.md §2).

Every failure the service reports is a ``QueryError`` carrying one code. The server maps the code
to a JSON-RPC error number; nothing here knows about the wire.
"""

from __future__ import annotations

from typing import Any

# Query codes (semantics.md §7.1).
ABORTED = "SESSION_QUERY_ABORTED"
CORRUPT_SESSION = "SESSION_QUERY_CORRUPT_SESSION"
EVENT_NOT_FOUND = "SESSION_QUERY_EVENT_NOT_FOUND"
INDEX_FAILED = "SESSION_QUERY_INDEX_FAILED"
INVALID_CONFIG = "SESSION_QUERY_INVALID_CONFIG"
INVALID_CURSOR = "SESSION_QUERY_INVALID_CURSOR"
INVALID_FILTER = "SESSION_QUERY_INVALID_FILTER"
INVALID_LIMIT = "SESSION_QUERY_INVALID_LIMIT"
INVALID_QUERY = "SESSION_QUERY_INVALID_QUERY"
INVALID_LINEAGE = "SESSION_QUERY_INVALID_LINEAGE"
INVALID_REQUEST = "SESSION_QUERY_INVALID_REQUEST"
INVALID_SURFACE = "SESSION_QUERY_INVALID_SURFACE"
INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"
PERSISTENCE_FAILED = "SESSION_QUERY_PERSISTENCE_FAILED"
SEARCH_DISABLED = "SESSION_QUERY_SEARCH_DISABLED"
SESSION_NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"
SOURCE_CONFLICT = "SESSION_QUERY_SOURCE_CONFLICT"
STALE_CURSOR = "SESSION_QUERY_STALE_CURSOR"
INTERNAL = "SESSION_QUERY_INTERNAL"
EXPORT_FAILED = "SESSION_QUERY_EXPORT_FAILED"  # ours: tools.md §2.6
UNAUTHORIZED = "SESSION_QUERY_UNAUTHORIZED"  # ours: hub.md §1, a TCP connection without its token

# Producer codes (protocol.md §4).
STORE_INVALID_HEADER = "SESSION_STORE_INVALID_HEADER"
STORE_INVALID_EVENT = "SESSION_STORE_INVALID_EVENT"
STORE_DUPLICATE_SESSION = "SESSION_STORE_DUPLICATE_SESSION"
STORE_SESSION_NOT_FOUND = "SESSION_STORE_SESSION_NOT_FOUND"
STORE_READ_ONLY = "SESSION_STORE_READ_ONLY"
STORE_PERSISTENCE_FAILED = "SESSION_STORE_PERSISTENCE_FAILED"

# What a single-target load can fail with (semantics.md §3.0.5), in that order.
LOAD = (SESSION_NOT_FOUND, PERSISTENCE_FAILED, CORRUPT_SESSION, SOURCE_CONFLICT)

# Codes reported as JSON-RPC InvalidParams (-32602); every other code is RequestFailed (-32803).
VALIDATION_CODES = frozenset(
    {
        INVALID_REQUEST,
        INVALID_FILTER,
        INVALID_WINDOW,
        INVALID_LIMIT,
        INVALID_QUERY,
        INVALID_CURSOR,
        INVALID_CONFIG,
        STORE_INVALID_HEADER,
        STORE_INVALID_EVENT,
    }
)

CANCELLED_MESSAGE = "session query request cancelled"
SEARCH_CANCELLED_MESSAGE = "session-search aborted"


class QueryError(Exception):
    """A coded failure. ``cause`` is the inner error's message where the spec preserves it."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        cause: str | None = None,
        session_id: str | None = None,
        seq: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.cause = cause
        self.session_id = session_id
        self.seq = seq

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code}
        if self.session_id is not None:
            out["sessionId"] = self.session_id
        if self.seq is not None:
            out["seq"] = self.seq
        if self.cause is not None:
            out["cause"] = self.cause
        return out

    def __repr__(self) -> str:
        return f"QueryError({self.code}, {self.message!r})"


def inner_message(exc: BaseException) -> str:
    """`<inner>` of semantics.md §7.3: the error's message, or "unknown error"."""
    if isinstance(exc, QueryError):
        return exc.message or "unknown error"
    text = str(exc.args[0]) if len(exc.args) == 1 else str(exc)
    return text if text else "unknown error"


def cancelled(search: bool = False) -> QueryError:
    return QueryError(ABORTED, SEARCH_CANCELLED_MESSAGE if search else CANCELLED_MESSAGE)
