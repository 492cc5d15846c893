"""The state file of ``dsh-query sync`` (postgres.md §6): per session, the source and target
revisions last seen, how many events were synced and a SHA-256 of that prefix. Both revisions
unchanged means nothing to read; only the source changed means its prefix digest stands in for
reading the target. The file is only a shortcut: a missing or unreadable one means reading."""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

import msgspec

from .. import jsoncodec
from ..files import make_private_dirs
from ..model.event import Event


def state_dir() -> str:
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def prefix_digest(events: list[Event]) -> str:
    digest = hashlib.sha256()  # of each event's bytes and a newline
    if events:
        digest.update(b"\n".join([event.raw for event in events]))
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    source: str
    target: str
    count: int
    sha256: str


class SyncState:
    """One (target, source) pair's state file, kept in memory and written back whole."""

    def __init__(self, target: str, source: str) -> None:
        name = hashlib.sha256(f"{target}\n{source}".encode()).hexdigest()[:16]
        self.path = os.path.join(state_dir(), "dsh-query", f"sync-{name}.json")
        self.entries: dict[str, Entry] = {}
        # A jsonl: source's listed headers by transcript stat (JsonlBackend.export_listing):
        # the next run's listing reads no header whose transcript kept its stat.
        self.listing: Listing = []
        self.changed = False
        try:
            with open(self.path, "rb") as file:
                kept: _Kept = jsoncodec.decode(file.read(), _Kept)  # typed: checked in C
        except (OSError, ValueError, msgspec.ValidationError):
            return  # no usable state: everything is read
        self.entries = {
            k: Entry(e.source, e.target, e.n, e.sha256) for k, e in kept.sessions.items()
        }
        self.listing = kept.listing

    def get(self, session_id: str) -> Entry | None:
        return self.entries.get(session_id)

    def keep_listing(self, listing: Listing) -> None:
        if listing != self.listing:
            self.listing = listing
            self.changed = True

    def put(self, session_id: str, entry: Entry) -> None:
        self.entries[session_id] = entry
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        directory = os.path.dirname(self.path)
        make_private_dirs(directory)
        body = {
            "v": 1,
            "sessions": {
                key: {"source": e.source, "target": e.target, "n": e.count, "sha256": e.sha256}
                for key, e in self.entries.items()
            },
            "listing": [
                [path, list(key), header, exact] for path, key, header, exact in self.listing
            ],
        }
        fd, temporary = tempfile.mkstemp(prefix=".sync-", dir=directory)  # 0600
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(jsoncodec.dumps(body))
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
        self.changed = False


Listing = list[tuple[str, tuple[int, int, int, int, int], str, bool]]


class _KeptEntry(msgspec.Struct, forbid_unknown_fields=False):
    source: str
    target: str
    n: int
    sha256: str


class _Kept(msgspec.Struct, forbid_unknown_fields=False):
    """The state file: ``v`` 1, the sessions' entries, a jsonl: source's kept listing."""

    v: int
    sessions: dict[str, _KeptEntry]
    listing: Listing = []
