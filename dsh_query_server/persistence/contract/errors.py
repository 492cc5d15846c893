"""The exceptions of the persistence contract (persistence.md §2.3, §6): what a backend raises
beside ``QueryError`` and ``OSError``."""

from __future__ import annotations


class SessionPersistenceCorruptionError(Exception):
    """Stored bytes or rows exist but are damaged or inconsistent (persistence.md §6)."""


class SessionFormatUnsupportedError(Exception):
    """The artifact is intact but its format version is not 0."""


class SessionPersistenceReadOnlyError(Exception):
    """A write on a backend mounted with readOnly=true."""


RAW_ARTIFACTS_UNSUPPORTED = "this session persistence backend does not expose raw artifacts"


class SessionRawArtifactsUnsupportedError(Exception):
    """``read_raw`` on a backend (or a composite member) without raw artifacts (tools.md §2.1)."""

    def __init__(self, message: str = RAW_ARTIFACTS_UNSUPPORTED) -> None:
        super().__init__(message)
