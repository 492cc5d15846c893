"""Compact storage for a live session's log: every event's exact JSON in compressed blocks.

A live store of a few hundred thousand events held as Event objects costs about 500 bytes an
event (object, bytes object, decoded envelope, boxed ints), more than twice the JSON itself. The
log is append-only and most reads touch a window of it, so the store keeps only the bytes and one
offset per event, and builds an Event when a reader asks for it (an envelope decode, about two
microseconds). Bytes sit in an open tail until it reaches BLOCK_BYTES; then the tail is sealed
into a Zstandard block (level 1, the fastest). 8 KiB blocks shrink event JSON to about a quarter
(64 KiB blocks would reach a fifth, but most sessions are only tens of KiB long, and the open
tail stays uncompressed). Reading a window decompresses a few blocks; a whole-log read
decompresses each block once.

``PackedLog`` is the writer's side (mutated under the store lock). ``LogView`` is what readers
get: the blocks sealed so far, the tail object of that moment and the length at the time of the
snapshot. Nothing a view can see is ever changed: sealing appends a block and starts a *new* tail
object, and appends only add bytes past the view's length. So a view stays a consistent,
detached snapshot while the writer keeps appending.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterator, Sequence
from typing import overload

import zstandard

from ..model.event import Event

BLOCK_BYTES = 1 << 13

# Compression contexts hold megabytes of state: one shared compressor (sealing is rare and
# short), one decompressor per reading thread.
_compressor = zstandard.ZstdCompressor(level=1)
_compress_lock = threading.Lock()
_local = threading.local()


def _decompress(block: bytes) -> bytes:
    decompressor = getattr(_local, "decompressor", None)
    if decompressor is None:
        decompressor = _local.decompressor = zstandard.ZstdDecompressor()
    return decompressor.decompress(block)


class PackedLog:
    __slots__ = ("blocks", "firsts", "tail", "tail_first", "offsets")

    def __init__(self) -> None:
        self.blocks: list[bytes] = []  # sealed, compressed
        self.firsts = array("Q")  # firsts[k]: index of the first event of block k
        self.tail = bytearray()  # the events after the last block, uncompressed
        self.tail_first = 0  # index of the first event in the tail
        # offsets[i]: where event i starts in the uncompressed log; offsets[len]: its end.
        self.offsets = array("Q", [0])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def extend(self, events: Sequence[Event]) -> None:
        tail, offsets = self.tail, self.offsets
        end = offsets[-1]
        for event in events:
            tail += event.raw
            end += len(event.raw)
            offsets.append(end)
        if len(tail) >= BLOCK_BYTES:
            with _compress_lock:
                # compress() returns an object allocated for the worst case; a copy holds just
                # the compressed bytes (without it the blocks took 5x their length).
                block = memoryview(_compressor.compress(bytes(tail))).tobytes()
            self.firsts.append(self.tail_first)
            self.blocks.append(block)
            self.tail = bytearray()  # a new object: views of the old tail keep seeing it as it was
            self.tail_first = len(self)

    def view(self) -> LogView:
        return LogView(
            self.blocks,
            len(self.blocks),
            self.firsts,
            self.tail,
            self.tail_first,
            self.offsets,
            len(self),
        )


class LogView(Sequence[Event]):
    """An immutable sequence of the first ``length`` events of a PackedLog."""

    __slots__ = (
        "_blocks",
        "_nblocks",
        "_firsts",
        "_tail",
        "_tail_first",
        "_offsets",
        "_length",
        "_cache",
    )

    def __init__(
        self,
        blocks: list[bytes],
        nblocks: int,
        firsts: array[int],
        tail: bytearray,
        tail_first: int,
        offsets: array[int],
        length: int,
    ) -> None:
        self._blocks, self._nblocks, self._firsts = blocks, nblocks, firsts
        self._tail, self._tail_first = tail, tail_first
        self._offsets, self._length = offsets, length
        self._cache: tuple[int, bytes] | None = None  # the last block decompressed

    def __len__(self) -> int:
        return self._length

    def raw(self, index: int) -> bytes:
        """The exact JSON of event ``index`` (0 <= index < len)."""
        offsets = self._offsets
        if index >= self._tail_first:
            base = offsets[self._tail_first]
            return bytes(self._tail[offsets[index] - base : offsets[index + 1] - base])
        k = bisect.bisect_right(self._firsts, index, 0, self._nblocks) - 1
        cache = self._cache
        if cache is None or cache[0] != k:
            cache = self._cache = (k, _decompress(self._blocks[k]))
        base = offsets[self._firsts[k]]
        return cache[1][offsets[index] - base : offsets[index + 1] - base]

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
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
