"""Build the benchmark corpus once into a cache directory, through the real backends.

Layout of ``<cache>/<spec key>/``:

- ``jsonl/``      a dsh JSONL root (uncompressed, so ``rg`` can search it), written with
                  ``JsonlBackend.create`` + ``append`` in batches;
- ``sessions.db`` the same sessions in our SQLite store, written with ``SqliteBackend``;
- ``live.jsonl``  the sessions that are also live: header and full log, one session per line
                  (lagging sessions have more events here than in the stores);
- ``plan.json``   ids, lengths, roles, planted phrases; ``done.json`` marks a finished build.

A note on the JSONL writes: ``JsonlBackend.create`` and the first ``append`` of a new session
each survey the whole root (every session directory is listed and stat'ed), so creating the n-th
session costs O(n) and a 10,000-session root costs O(n^2) to build (measured: ~55 ms per new
session at 3,000 sessions). The builder therefore writes each session through its own
``JsonlBackend`` on a one-session staging root and moves the finished session directory into the
real root: the bytes are exactly what the backend writes, without the quadratic survey.
"""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import sys
import threading
import time
from typing import Any

import msgspec

from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.jsonl import JsonlBackend, escape_segment, project_dir
from dsh_query_server.persistence.sqlite import SqliteBackend

from .corpus import PHRASES, PROBE_LONG, PROBE_SHORT, CorpusSpec, generate

_DONE = object()


class Progress:
    """A one-line progress report on stderr, at most every ``interval`` seconds."""

    def __init__(self, label: str, total: int, unit: str, interval: float = 2.0) -> None:
        self.label, self.total, self.unit, self.interval = label, total, unit, interval
        self.started = self.last = time.monotonic()
        self.tty = sys.stderr.isatty()

    def update(self, done: int, extra: str = "", force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 and self.total > done else 0.0
        line = (
            f"{self.label}: {done:,}/{self.total:,} {self.unit} ({100 * done / max(1, self.total):.0f}%),"
            f" {rate:,.0f} {self.unit}/s, elapsed {elapsed:,.0f}s, eta {eta:,.0f}s {extra}"
        )
        if self.tty:
            sys.stderr.write("\r\x1b[K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def finish(self, done: int, extra: str = "") -> None:
        self.update(done, extra, force=True)
        if self.tty:
            sys.stderr.write("\n")


def batches(rng: random.Random, events: list[Event]) -> list[list[Event]]:
    """Checkpoint-sized write batches (50 to 500 events)."""
    out, i = [], 0
    while i < len(events):
        n = rng.randint(50, 500)
        out.append(events[i : i + n])
        i += n
    return out


class _Writer(threading.Thread):
    """Consumes (header, events, batches) and writes them; fsync waits overlap with generation."""

    def __init__(self, name: str, write: Any) -> None:
        super().__init__(name=name, daemon=True)
        self.queue: queue.Queue = queue.Queue(maxsize=16)
        self.write = write
        self.error: BaseException | None = None
        self.written = 0

    def run(self) -> None:
        while True:
            item = self.queue.get()
            if item is _DONE:
                return
            if self.error is not None:
                continue
            try:
                self.write(*item)
                self.written += len(item[1])
            except BaseException as exc:  # noqa: BLE001 - reported by the builder
                self.error = exc


def build(spec: CorpusSpec, directory: str) -> dict[str, Any]:
    """Build the corpus into ``directory`` (removed first); returns the plan summary."""
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    jsonl_root = os.path.join(directory, "jsonl")
    staging = os.path.join(directory, "staging")
    os.makedirs(jsonl_root)
    os.makedirs(staging)
    sqlite = SqliteBackend(os.path.join(directory, "sessions.db"), journal_mode="wal")

    def write_jsonl(header: Header, events: list[Event], chunks: list[list[Event]]) -> None:
        stage = os.path.join(staging, "root")
        backend = JsonlBackend(stage, compression="none")
        backend.create(header)
        for chunk in chunks:
            backend.append(header.id, chunk)
        project = project_dir(None if header.cwd is msgspec.UNSET else header.cwd)
        target_project = os.path.join(jsonl_root, project)
        os.makedirs(target_project, mode=0o700, exist_ok=True)
        os.rename(
            os.path.join(stage, project, escape_segment(header.id)),
            os.path.join(target_project, escape_segment(header.id)),
        )
        shutil.rmtree(stage)

    def write_sqlite(header: Header, events: list[Event], chunks: list[list[Event]]) -> None:
        sqlite.create(header)
        for chunk in chunks:
            sqlite.append(header.id, chunk)

    writers = [_Writer("jsonl-writer", write_jsonl), _Writer("sqlite-writer", write_sqlite)]
    for writer in writers:
        writer.start()
    live_path = os.path.join(directory, "live.jsonl")
    encoder = msgspec.json.Encoder()
    sessions: list[dict[str, Any]] = []
    generated = 0
    progress = Progress("building corpus", spec.events, "events")
    rng = random.Random(spec.seed * 7919)
    with open(live_path, "wb") as live_file:
        for index, (p, raw_events) in enumerate(generate(spec)):
            events = [Event.from_value(e) for e in raw_events]
            persisted = events[: p.persisted_length] if p.persisted_length is not None else events
            header = Header.from_value(p.header)
            chunks = batches(rng, persisted)
            for writer in writers:
                if writer.error is not None:
                    raise RuntimeError(f"{writer.name} failed: {writer.error!r}") from writer.error
                writer.queue.put((header, persisted, chunks))
            if p.live:
                live_file.write(encoder.encode({"header": p.header, "events": raw_events}) + b"\n")
            record = p.to_json()
            record["length"] = len(events)
            sessions.append(record)
            generated += len(events)
            written = min(w.written for w in writers)
            progress.update(
                generated,
                f"| {index + 1:,} sessions generated, {written:,} events written to both stores",
            )
    for writer in writers:
        writer.queue.put(_DONE)
    while any(w.is_alive() for w in writers):
        written = min(w.written for w in writers)
        progress.update(generated, f"| flushing writers: {written:,} events written to both stores")
        time.sleep(0.2)
    for writer in writers:
        writer.join()
        if writer.error is not None:
            raise RuntimeError(f"{writer.name} failed: {writer.error!r}") from writer.error
    sqlite.close()
    shutil.rmtree(staging)
    progress.finish(generated, "| done")
    summary = {
        "spec": spec.__dict__,
        "sessions": sessions,
        "totalSessions": len(sessions),
        "totalEvents": sum(s["length"] for s in sessions),
        "persistedEvents": sum(s["persistedLength"] for s in sessions),
        "liveSessions": sum(1 for s in sessions if s["live"]),
        "liveEvents": sum(s["length"] for s in sessions if s["live"]),
        "laggingSessions": sum(
            1 for s in sessions if s["live"] and s["persistedLength"] < s["length"]
        ),
        "phrases": {k: v[0] for k, v in PHRASES.items()},
        "probes": {"short": PROBE_SHORT, "long": PROBE_LONG},
        "buildSeconds": time.monotonic() - progress.started,
    }
    with open(os.path.join(directory, "plan.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(directory, "done.json"), "w") as f:
        json.dump({"key": spec.key(), "finished": time.time()}, f)
    return summary


def ensure(spec: CorpusSpec, cache_dir: str, rebuild: bool = False) -> tuple[str, dict[str, Any]]:
    """The corpus directory for ``spec``, built unless a finished build is cached."""
    directory = os.path.join(cache_dir, spec.key())
    if not rebuild and os.path.exists(os.path.join(directory, "done.json")):
        with open(os.path.join(directory, "plan.json")) as f:
            summary = json.load(f)
        print(
            f"corpus: cached at {directory} ({summary['totalSessions']:,} sessions, "
            f"{summary['totalEvents']:,} events)",
            file=sys.stderr,
        )
        return directory, summary
    print(
        f"corpus: building {spec.sessions:,} sessions / {spec.events:,} events into {directory}",
        file=sys.stderr,
    )
    return directory, build(spec, directory)
