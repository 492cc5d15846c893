"""Issue 28's fast paths change no answer: the index built from real transcripts through the
importers' bulk read (with and without its worker process) holds exactly the documents and
sessions the window-by-window read gave, and the same searches find the same hits."""

from __future__ import annotations

import pathlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.results import Digested, Inspection, Snapshot, Window
from dsh_query_server.persistence.importing import shared
from dsh_query_server.persistence.importing.worker import load_digest
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.mount.composite import CompositeBackend
from dsh_query_server.search.documents import (
    DIGEST,
    PAYLOADS,
    WINDOW,
    digest,
    persisted_documents,
    undigest,
)
from dsh_query_server.search.plan import stored
from dsh_query_server.search.reconcile import SearchIndex
from dsh_query_server.search.schema import _RESERVED, REPLACEMENT, sanitize
from dsh_query_server.session.store import SessionStore
from tests.persistence.importing.test_import_bulk import CLAUDE, Pick, _session_id, build_home


class WindowsOnly:
    """An importer without its bulk read: the index reads each log window by window, as before
    issue 28."""

    def __init__(self, inner: ClaudeBackend | CodexBackend) -> None:
        self.inner = inner
        self.uri = inner.uri
        self.writable = False

    def list(self, token: CancelToken = NULL_TOKEN) -> Any:
        return self.inner.list(token)

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        return self.inner.list_snapshots(token)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        return self.inner.inspect(session_id, token)

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        return self.inner.inspect_window(session_id, first, last, token)

    @property
    def cheap_windows(self) -> bool:
        return True

    def create(self, header: Any) -> None:
        self.inner.create(header)

    def append(self, session_id: str, events: Any) -> None:
        self.inner.append(session_id, events)

    def close(self) -> None:
        self.inner.close()


class CorruptDigests(WindowsOnly):
    """The importer's bulk read, but that every digest's bytes after its first part are
    garbage: what a worker that went wrong would send."""

    def inspect_many(self, *args: Any, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        self.corrupted = 0
        for sid, got in self.inner.inspect_many(*args, **kwargs):
            if isinstance(got, Digested):
                first = got.ends[0]
                data = memoryview(bytes(got.data[:first]) + b"\xc1garbage")
                got = Digested(got.meta, data, [first, len(data)])
                self.corrupted += 1
            yield sid, got


def index_rows(root: pathlib.Path, tmp: pathlib.Path, how: str) -> Iterator[tuple[str, list[Any]]]:
    claude = ClaudeBackend(str(root / "claude"), f"claude:{root / 'claude'}")
    codex = CodexBackend(str(root / "codex"), f"codex:{root / 'codex'}")
    members: list[Any] = [claude, codex]
    if how == "windows":
        members = [WindowsOnly(claude), WindowsOnly(codex)]
    if how == "corrupt":
        members = [CorruptDigests(claude), CorruptDigests(codex)]
    binding = PersistenceBinding()
    binding.mount(CompositeBackend(members, "composite:test"))
    index = SearchIndex.open(str(tmp / f"{how}.sqlite"), "wal", SessionStore(), binding)
    try:
        index.reconcile(NULL_TOKEN)
        if how == "corrupt":
            yield "corrupted", [sum(m.corrupted for m in members)]
        conn = index.conn
        yield "docs", conn.execute("SELECT rowid, * FROM persisted_docs ORDER BY rowid").fetchall()
        yield "sessions", conn.execute("SELECT * FROM persisted_sessions ORDER BY id").fetchall()
        for phrase in ("dialyzer", "the", "elixir project", "mix", "error"):
            yield (
                phrase,
                conn.execute(
                    "SELECT rowid, session_id, seq FROM persisted_docs WHERE persisted_docs MATCH ?"
                    " ORDER BY rank, rowid",
                    (f'"{phrase}"',),
                ).fetchall(),
            )
    finally:
        index.close()


picks = st.lists(
    st.tuples(st.integers(0, len(CLAUDE) - 1), st.integers(0, 120), st.booleans()),
    min_size=4,
    max_size=8,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(claude=picks, codex=picks)
def test_the_index_is_the_same_whichever_read_built_it(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    claude: list[Pick],
    codex: list[Pick],
) -> None:
    root = tmp_path_factory.mktemp("home")
    build_home(root, claude, codex)
    tmp = tmp_path_factory.mktemp("index")
    built: dict[str, dict[str, list[Any]]] = {}
    for how, worker in (("windows", "0"), ("bulk", "0"), ("worker", "1")):
        monkeypatch.setenv(shared.ENV, worker)
        built[how] = dict(index_rows(root, tmp, how))
    assert built["windows"]["docs"], "the home indexes some text"
    assert built["bulk"] == built["windows"]
    assert built["worker"] == built["windows"]


_RESERVED_CHARS = ["\x00", "\ufdd0", "\ufdd1", "\ud800", "\udbff", "\udc00", "\udfff"]


@given(st.text(st.one_of(st.characters(), st.sampled_from([*_RESERVED_CHARS, "é", "\ufdd2"]))))
def test_sanitize_fast_path_is_the_regex(text: str) -> None:
    assert sanitize(text) == _RESERVED.sub(REPLACEMENT, text)
    assert sanitize(text + "\x00") == _RESERVED.sub(REPLACEMENT, text + "\x00")


def test_a_long_log_is_indexed_the_same_by_every_read(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log past WINDOW events, which the window-by-window read takes in several windows."""
    build_home(tmp_path / "home", [(i % len(CLAUDE), 0, False) for i in range(4)], [(0, 0, False)])
    source = next(p for p in CLAUDE if "tool_heavy" in p.name).read_bytes()
    sid = _session_id(source, b'"sessionId"')
    ids = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|toolu_\w+")
    copies = []
    for _ in range(260):  # every repetition with fresh uuids and tool ids, one session id
        fresh: dict[bytes, bytes] = {sid.encode(): sid.encode()}

        def renamed(m: re.Match[bytes], fresh: dict[bytes, bytes] = fresh) -> bytes:
            return fresh.setdefault(m.group(), str(uuid.uuid4()).encode())

        copies.append(ids.sub(renamed, source))
    folder = tmp_path / "home" / "claude" / "projects" / "-long"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(b"".join(copies))
    built: dict[str, dict[str, list[Any]]] = {}
    for how, worker in (("windows", "0"), ("bulk", "0"), ("worker", "1")):
        monkeypatch.setenv(shared.ENV, worker)
        built[how] = dict(index_rows(tmp_path / "home", tmp_path, how))
    assert max(row[3] for row in built["windows"]["docs"]) > 8192  # seq
    assert built["bulk"] == built["windows"]
    assert built["worker"] == built["windows"]


def test_the_worker_digests_what_the_index_would_make(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a worker, ids come Digested (the worker made the documents), and each digest holds
    exactly the documents this process makes of ``inspect``'s log, as the index stores them."""
    build_home(tmp_path, [(i % len(CLAUDE), 0, False) for i in range(8)], [])
    monkeypatch.setenv(shared.ENV, "1")
    backend = ClaudeBackend(str(tmp_path / "claude"), f"claude:{tmp_path / 'claude'}")
    ids = [str(h.id) for h in backend.list()]
    answers = list(backend.inspect_many(ids, WINDOW, NULL_TOKEN, PAYLOADS, DIGEST))
    digested = [(sid, got) for sid, got in answers if isinstance(got, Digested)]
    assert digested, "the worker answered some ids"
    for sid, got in digested:
        want = backend.inspect(sid)
        assert got.meta.raw == want.meta.raw
        want_docs = [stored(d) for d in persisted_documents(sid, want.events)]
        assert list(undigest(got.data, got.ends)) == want_docs


def test_a_digest_sends_documents_as_the_index_stores_them() -> None:
    """The worker's digest is what the insert would store (``plan.stored``): a time that is no
    number becomes NULL, a lone surrogate U+FFFD; a time past 64 bits, which msgpack cannot
    carry, makes the digest raise (the id is then read in process)."""
    header = Header.from_json(b'{"version":1,"id":"s","createdAt":1}')
    for event in (
        b'{"type":"user/message","seq":0,"time":"soon","surfaceOp":"append","data":{"content":[{"type":"text","text":"hi"}]}}',
        b'{"type":"user/message","seq":0,"time":1,"surfaceOp":"append","data":{"content":[{"type":"text","text":"\\ud800 \\u0000"}]}}',
    ):
        docs = list(persisted_documents("s", [Event.from_json(event)]))
        parts = digest("s", Inspection(header, [Event.from_json(event)]))
        got = list(undigest(memoryview(b"".join(parts)), [sum(map(len, parts))]))
        assert got == [stored(d) for d in docs] and got != docs
    huge = b'{"type":"user/message","seq":0,"time":18446744073709551616,"surfaceOp":"append","data":{"content":[{"type":"text","text":"hi"}]}}'
    with pytest.raises((ValueError, OverflowError)):
        digest("s", Inspection(header, [Event.from_json(huge)]))


def test_a_digest_that_breaks_midway_is_read_again(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Documents are inserted as a digest decodes; when its bytes break after some were, the
    log is read in process and its rows written again: the index holds what a clean build
    holds (row ids aside: they never order a search)."""
    root, tmp = tmp_path / "home", tmp_path / "index"
    tmp.mkdir()
    build_home(root, [(i % len(CLAUDE), 0, False) for i in range(8)], [(0, 0, False)] * 4)
    monkeypatch.setenv(shared.ENV, "1")
    clean = dict(index_rows(root, tmp, "bulk"))
    corrupt = dict(index_rows(root, tmp, "corrupt"))
    assert corrupt.pop("corrupted")[0] > 0, "the worker digested some logs"
    assert sorted(r[1:] for r in corrupt.pop("docs")) == sorted(r[1:] for r in clean.pop("docs"))
    strip = {k: sorted(r[1:] for r in v) if k != "sessions" else v for k, v in clean.items()}
    assert {
        k: sorted(r[1:] for r in v) if k != "sessions" else v for k, v in corrupt.items()
    } == strip


def test_a_log_read_ahead_is_held_as_the_worker_would_send_it(tmp_path: pathlib.Path) -> None:
    """The server's own reads ahead of their turn are held as their digest (shared._compact):
    the documents the index would make; a digest that refuses the log has it read again."""
    build_home(tmp_path, [(i % len(CLAUDE), 0, False) for i in range(4)], [])
    backend = ClaudeBackend(str(tmp_path / "claude"), f"claude:{tmp_path / 'claude'}")
    ids = [str(h.id) for h in backend.list()]

    def read_one(sid: str, token: CancelToken) -> Any:
        return backend.inspect_payloads(sid, PAYLOADS, token)

    for sid in ids:
        held = shared._compact(
            sid, read_one(sid, NULL_TOKEN), load_digest(DIGEST), read_one, NULL_TOKEN
        )  # pyright: ignore[reportPrivateUsage]
        assert isinstance(held, Digested)
        want = [stored(d) for d in persisted_documents(sid, backend.inspect(sid).events)]
        assert list(undigest(held.data, held.ends)) == want

    def refuse(sid: str, ins: Inspection) -> list[bytes]:
        ins.events.clear()  # consumed, as a digest does, then refused
        raise ValueError("no")

    again = shared._compact(ids[0], read_one(ids[0], NULL_TOKEN), refuse, read_one, NULL_TOKEN)  # pyright: ignore[reportPrivateUsage]
    assert isinstance(again, Inspection) and len(again.events) == len(
        backend.inspect(ids[0]).events
    )
