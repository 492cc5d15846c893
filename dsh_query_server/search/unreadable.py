"""Unreadable sessions (semantics.md §6.5 [ours]): a persisted log whose inspection raised
corruption is left out of the index instead of failing every search, and each search names it.

The index remembers each one at the revision that failed, so an unchanged damaged log is read
once, not by every search, and is read again as soon as its revision changes (a repair, an
append). Only ``SessionPersistenceCorruptionError`` counts: a backend that fails in any other
way still fails the search (PERSISTENCE_FAILED), as §6.5 step 2.4 says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from msgspec import UNSET, UnsetType

from .. import errors
from ..errors import inner_message
from ..model.event import Header
from ..model.wire import Wire
from ..persistence.contract.errors import SessionPersistenceCorruptionError
from ..persistence.contract.results import SkippedArtifact

# What one result lists at most; ``unreadableCount`` counts them all.
MAX_REPORTED = 100


class UnreadableSession(Wire):
    """One entry of a result's ``unreadable`` list: the failure's own code, a message that names
    the damaged file or row, and the file (when there is one)."""

    sessionId: str
    code: str
    message: str
    path: str | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A listed session whose log could not be read at ``revision``."""

    session_id: str
    revision: str
    header: Header
    cause: str  # the backend's own message, as an exact read's error carries it
    where: str | None
    path: str | None

    @property
    def code(self) -> str:
        return errors.CORRUPT_SESSION

    @property
    def message(self) -> str:
        where = self.where or f'the stored log of session "{self.session_id}"'
        return f"{self.cause} ({where})"

    def entry(self) -> UnreadableSession:
        return UnreadableSession(
            self.session_id, self.code, self.message, UNSET if self.path is None else self.path
        )


def unreadable(
    session_id: str, revision: str, header: Header, exc: SessionPersistenceCorruptionError
) -> Unreadable:
    return Unreadable(session_id, revision, header, inner_message(exc), exc.where, exc.path)


def reported(
    found: Mapping[str, Unreadable], visible: Callable[[object], bool] | None = None
) -> tuple[list[UnreadableSession], int]:
    """The entries a result carries (sorted by id in code-point order, at most MAX_REPORTED)
    and how many there are; ``visible`` keeps only the sessions of a workspace (by header cwd)."""
    chosen: Iterable[Unreadable] = found.values()
    if visible is not None:
        chosen = [u for u in chosen if visible(None if u.header.cwd is UNSET else u.header.cwd)]
    return capped(u.entry() for u in chosen)


def capped(entries: Iterable[UnreadableSession]) -> tuple[list[UnreadableSession], int]:
    """Sorted by id (then path), at most MAX_REPORTED, and how many there are."""
    ordered = sorted(entries, key=lambda u: (u.sessionId, u.path or ""))
    return ordered[:MAX_REPORTED], len(ordered)


def skipped_entry(artifact: SkippedArtifact) -> UnreadableSession:
    """A transcript the listing skipped (persistence.md §4.8 step 4.5), as status reports it."""
    return UnreadableSession(
        artifact.session_id,
        errors.CORRUPT_SESSION,
        f"{artifact.message} ({artifact.path})",
        artifact.path,
    )
