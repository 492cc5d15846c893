"""What ``dsh-query sync`` copies of one session (postgres.md §6): the source's header and stored
valid prefix as pieces. A piece is an event, or, read from a ``jsonl:`` source, a canonical packed
line (records.KeptLine) standing for its members: the batches store such a line as it is
(rows.encode_batch), so its members are built only where something must look at them (a
comparison with the stored log, or a batch cut through the line)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model.event import Event, Header
from ..persistence.logical.records import KeptLine, Piece
from ..persistence.postgres import rows
from .state import prefix_digest


def width(piece: Piece) -> int:
    """The events a piece stands for."""
    return 1 if isinstance(piece, Event) else piece.members


def count_of(pieces: Sequence[Piece]) -> int:
    """The events that ``pieces`` stand for."""
    return sum(map(width, pieces))


def size_of(piece: Piece) -> int:
    """The bytes of a piece's record: an event's, or a kept line's."""
    return len(piece.raw) if isinstance(piece, Event) else len(piece.line)


@dataclass(frozen=True, slots=True)
class SourceLog:
    header: Header
    pieces: Sequence[Piece]
    count: int  # events

    @classmethod
    def of(cls, header: Header, pieces: Sequence[Piece]) -> SourceLog:
        return cls(header, pieces, count_of(pieces))

    @property
    def size(self) -> int:
        return sum(map(size_of, self.pieces))

    def events(self) -> list[Event]:
        """Every event, kept lines' members built."""
        return rows.events_of(self.pieces)

    def head(self, count: int) -> list[Piece]:
        """The pieces of the first ``count`` events (a kept line cut there as its members)."""
        return self._split(count)[0]

    def tail(self, start: int) -> list[Piece]:
        """The pieces of the events from index ``start`` on (a kept line cut there as its
        members)."""
        return self._split(start)[1]

    def _split(self, at: int) -> tuple[list[Piece], list[Piece]]:
        seen = 0
        for index, piece in enumerate(self.pieces):
            n = width(piece)
            if seen + n > at:
                before, after = list(self.pieces[:index]), list(self.pieces[index + 1 :])
                if seen == at:
                    return before, [piece, *after]
                members = piece.events() if isinstance(piece, KeptLine) else [piece]
                cut = at - seen
                return before + members[:cut], [*members[cut:], *after]
            seen += n
        return list(self.pieces), []

    def digest(self, count: int | None = None) -> str:
        """prefix_digest of the header and the first ``count`` events (all by default)."""
        pieces = self.pieces if count is None or count >= self.count else self.head(count)
        return prefix_digest(self.header, pieces)
