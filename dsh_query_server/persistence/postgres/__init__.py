"""The ``postgres:`` backend (postgres.md): a shared PostgreSQL store for a team.

conninfo: the mount URI, redaction; schema: DDL and the opening checks; rows: the record
encoding; pool: the connections; connection: transactions, retries, cancellation, failures;
backend: the persistence contract.
"""

from .backend import PostgresBackend, open_postgres
from .errors import AppendInDoubtError, PostgresUnavailableError, SessionAppendConflictError

__all__ = [
    "AppendInDoubtError",
    "PostgresBackend",
    "PostgresUnavailableError",
    "SessionAppendConflictError",
    "open_postgres",
]
