"""The jsonl backend's refusals (persistence.md §6), with their exact messages."""

from __future__ import annotations

from ..contract.errors import SessionPersistenceCorruptionError
from .paths import SUFFIX


class JsonlBackendError(Exception):
    """A refusal that is neither corruption nor an OS error: not found, layout, encoding
    mismatch, duplicate ids, append contiguity, torn tail (persistence.md §6: "other")."""


class RollbackError(Exception):
    """An append failed and truncating it away failed too; carries both failures."""

    def __init__(self, path: str, error: BaseException, rollback_error: BaseException) -> None:
        super().__init__(f'failed to roll back append to "{path}"')
        self.error = error
        self.rollback_error = rollback_error


def corrupt(message: str) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(message)


def flat_layout_error(path: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'session artifact "{path}" uses the unsupported flat-file layout; use a separate root '
        "or move it into a project/session directory before loading"
    )


def mismatch_error(path: str, kind: str, mode: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'session artifact "{path}" uses {SUFFIX[kind]}, but this backend is configured for '
        f'compression "{mode}"; use a separate root or select the matching compression mode'
    )


def not_found(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(f'session "{session_id}" not found')


def duplicate(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'duplicate JSONL session id "{session_id}" appears in multiple project directories'
    )


def exists_on_disk(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'refusing to materialize "{session_id}": a log already exists on disk (load/resume it '
        "instead)"
    )
