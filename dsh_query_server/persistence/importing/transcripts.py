"""One transcript's items (importers.md §0.1, §3.1): the header scan's first MiB and the
mapper's feed, with the byte meter of a read that shows progress and the window memo's notes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ...cancel import CancelToken
from .lines import Item, Record, read_items, read_lines
from .survey import HEAD_LIMIT  # the listing's header scan reads as far
from .window import MemoBuilder

METER_STEP = 1 << 20  # a metered read reports every MiB


def open_items(path: str, limit: int, token: CancelToken, *, head: bool = False) -> Iterator[Item]:
    """The items of a transcript's first ``limit`` bytes (a header scan stops at 1 MiB)."""
    with open(path, "rb") as stream:
        yield from read_items(
            stream,
            limit,
            token,
            compressed=path.endswith(".zst"),
            max_line_end=HEAD_LIMIT if head else None,
        )


def scan_anchor(
    path: str, size: int, token: CancelToken, is_anchor: Callable[[dict[str, object]], bool]
) -> Record | None:
    """§3.1's header scan: the first record that ``is_anchor`` accepts, within 1 MiB."""
    for item in open_items(path, size, token, head=True):
        if isinstance(item, Record) and is_anchor(item.value):
            return item
    return None


def feed(
    path: str,
    size: int,
    token: CancelToken,
    sink: Callable[[Item], None],
    builder: MemoBuilder | None,
) -> None:
    """Every item of the transcript's first ``size`` bytes to ``sink``; with a builder, telling
    it which line and record each emitted event comes from."""
    # A request reading this one log shows its stored bytes read (query/loading.py ``metered``).
    meter = token.reading
    if builder is None and meter is None:
        for item in open_items(path, size, token):
            sink(item)
        return
    compressed = path.endswith(".zst")
    next_report = 0
    with open(path, "rb") as stream:
        for line in read_lines(stream, size, token, compressed=compressed):
            if meter is not None and line.start >= next_report:
                # A line's offset is plaintext; of a Zstandard file the stored bytes consumed so
                # far are where the file stands (the decoder reads it piece by piece, bounded).
                meter(stream.tell() if compressed else line.start, size)
                next_report = line.start + METER_STEP
            if builder is None:
                for item in line.items:
                    sink(item)
                continue
            builder.line(line)
            for k, item in enumerate(line.items):
                builder.item(k, item)
                sink(item)
    if builder is not None:
        builder.end()
