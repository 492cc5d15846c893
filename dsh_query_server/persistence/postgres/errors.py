"""Errors of the ``postgres:`` backend (postgres.md §3.6, §4). All are "other" errors of
persistence.md §2.3 (PERSISTENCE_FAILED on reads), and every message is scrubbed of secrets."""

from __future__ import annotations


class SessionAppendConflictError(Exception):
    """Another writer got there first: the stored log does not end where the batch starts."""

    def __init__(self, message: str, session_id: str, first_seq: int, stored_count: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.first_seq = first_seq
        self.stored_count = stored_count


class PostgresUnavailableError(Exception):
    """The database could not be reached, or a statement failed for a reason of its own."""


class AppendInDoubtError(Exception):
    """The connection was lost during COMMIT: the batch may or may not be stored (§3.7)."""
