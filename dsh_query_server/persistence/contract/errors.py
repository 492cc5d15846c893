"""The exceptions of the persistence contract (persistence.md §2.3, §6): what a backend raises
beside ``QueryError`` and ``OSError``."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager


class SessionPersistenceCorruptionError(Exception):
    """Stored bytes or rows exist but are damaged or inconsistent (persistence.md §6).

    ``where`` names the damaged artifact (a file, or a store's row) and ``path`` the file that
    holds it, for the reports of unreadable sessions (semantics.md §6.5 [ours]); neither is
    ever part of the message, whose text the spec fixes."""

    def __init__(self, *args: object, where: str | None = None, path: str | None = None) -> None:
        super().__init__(*args)
        self.where = where
        self.path = path


def corruption_at(
    exc: SessionPersistenceCorruptionError, where: str, path: str | None = None
) -> None:
    """Name the artifact of a corruption raised while reading it, unless a deeper reader
    already named a more precise one."""
    if exc.where is None:
        exc.where = where
        exc.path = path


@contextmanager
def naming(where: str, path: str | None = None) -> Generator[None]:
    """``corruption_at`` for every corruption raised inside the block."""
    try:
        yield
    except SessionPersistenceCorruptionError as exc:
        corruption_at(exc, where, path)
        raise


class SessionFormatUnsupportedError(Exception):
    """The artifact is intact but its format version is not 0."""


class SessionPersistenceReadOnlyError(Exception):
    """A write on a backend mounted with readOnly=true."""


RAW_ARTIFACTS_UNSUPPORTED = "this session persistence backend does not expose raw artifacts"


class SessionRawArtifactsUnsupportedError(Exception):
    """``read_raw`` on a backend (or a composite member) without raw artifacts (tools.md §2.1)."""

    def __init__(self, message: str = RAW_ARTIFACTS_UNSUPPORTED) -> None:
        super().__init__(message)
