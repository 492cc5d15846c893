"""Compact storage for a live session's log: every event's exact JSON in one growing buffer.

A live store of a few hundred thousand events held as Event objects costs about 500 bytes an
event (object, bytes object, decoded envelope, boxed ints), more than twice the JSON itself. The
log is append-only and most reads touch a window of it, so the store keeps only the bytes and one
offset per event, and builds an Event when a reader asks for it. Building one costs an envelope
decode (about a microsecond); a whole-log read of 100,000 events pays ~0.1 s, a window nothing
noticeable.

``PackedLog`` is the writer's buffer (mutated under the store lock). ``LogView`` is what readers
get: the buffer plus the length at the time of the snapshot. Bytes below that length are never
changed, so a view stays a consistent, detached snapshot while the writer keeps appending.
"""

from __future__ import annotations

from array import array
from typing import Iterator, Sequence, overload

from ..model.event import Event


class PackedLog:
    __slots__ = ("buffer", "offsets")

    def __init__(self) -> None:
        self.buffer = bytearray()
        # offsets[i] is where event i starts; offsets[len] is the end of the last event.
        self.offsets = array("Q", [0])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def extend(self, events: Sequence[Event]) -> None:
        buffer, offsets = self.buffer, self.offsets
        for event in events:
            buffer += event.raw
            offsets.append(len(buffer))

    def view(self) -> LogView:
        return LogView(self.buffer, self.offsets, len(self.offsets) - 1)


class LogView(Sequence[Event]):
    """An immutable sequence of the first ``length`` events of a PackedLog."""

    __slots__ = ("_buffer", "_offsets", "_length")

    def __init__(self, buffer: bytearray, offsets: array, length: int) -> None:
        self._buffer, self._offsets, self._length = buffer, offsets, length

    def __len__(self) -> int:
        return self._length

    def raw(self, index: int) -> bytes:
        """The exact JSON of event ``index`` (0 <= index < len)."""
        offsets = self._offsets
        return bytes(self._buffer[offsets[index] : offsets[index + 1]])

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self._event(i) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("log index out of range")
        return self._event(index)

    def _event(self, index: int) -> Event:
        return Event.from_json(self.raw(index))

    def __iter__(self) -> Iterator[Event]:
        for i in range(self._length):
            yield self._event(i)

    def __bool__(self) -> bool:
        return self._length > 0
