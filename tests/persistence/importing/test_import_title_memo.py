"""Titles of foreign homes from the title memo (query/titlememo.py): an import backend lists each
transcript's revision with its header (ListedRevisions) and names the revision a title read read
at when its listing's proofs (importing/survey.py) show that read was of exactly the listed bytes,
so a title batch, a sidebar or ``dsh-query sessions`` reads no unchanged log twice.

A kept Claude + Codex composite answers exactly what fresh backends inspecting every log answer,
through random changes made now (too young to prove anything) or aged; and by count, a second
batch over unchanged aged homes reads no log, and one over a changed log reads that log alone."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.capabilities import Capabilities
from dsh_query_server.persistence.contract.results import Inspection, Payloads, Window
from dsh_query_server.persistence.importing import shared
from dsh_query_server.persistence.importing.backend import Candidate
from dsh_query_server.persistence.importing.window import MemoBuilder
from dsh_query_server.persistence.mount.composite import CompositeBackend, composite
from dsh_query_server.query.service import SessionQueryService
from tests.persistence.importing.test_import_listing import (
    S0,
    SETTINGS,
    STAMP,
    Clock,
    apply,
    claude_op,
    codex_op,
    line,
)
from tests.persistence.test_window import InspectOnly, service_over


def title_line(sid: str, text: str) -> bytes:
    return line({"type": "custom-title", "customTitle": text, "sessionId": sid})


@st.composite
def title_op(draw: Any) -> tuple[tuple[Any, ...], int]:
    """A new title appended to a Claude transcript (its id as its anchor names it or not)."""
    rel = draw(st.sampled_from([f"projects/-a/{S0}.jsonl", "projects/-a/t2.jsonl"]))
    sid = S0 if S0 in rel else "t2"
    text = draw(st.sampled_from(["one", "two", " "]))
    return ("append", f"claude/{rel}", title_line(sid, text)), draw(st.integers(0, 2))


def in_home(op: tuple[tuple[Any, ...], int], home: str) -> tuple[tuple[Any, ...], int]:
    (kind, rel, payload), aged = op
    return (kind, f"{home}/{rel}", payload), aged


OP = st.one_of(
    title_op(),
    claude_op().map(lambda op: in_home(op, "claude")),
    codex_op().map(lambda op: in_home(op, "codex")),
)


def mounted(root: pathlib.Path) -> CompositeBackend:
    claude, codex = str(root / "claude"), str(root / "codex")
    return composite(
        [ClaudeBackend(claude, f"claude:{claude}"), CodexBackend(codex, f"codex:{codex}")], "auto"
    )


def titles(service: SessionQueryService, ids: list[str]) -> Any:
    return to_builtins(service.read_titles(ids, CancelToken()))


@SETTINGS
@given(st.lists(OP, min_size=1, max_size=16))
def test_titles_from_the_memo_equal_fresh_full_reads(ops) -> None:
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        kept = service_over(mounted(root))
        clock = Clock()
        for op, aged in ops:
            apply(root, clock, op, aged)
            fresh = mounted(root)
            ids = [str(h.id) for h in fresh.list()] + ["absent"]
            expected = titles(service_over(InspectOnly(fresh)), ids)
            for _ in range(2):  # the second batch is the memo's wherever the first filled it
                assert titles(kept, ids) == expected, op
    finally:
        shutil.rmtree(root)


# -- by count ------------------------------------------------------------------------------


class CountedClaude(ClaudeBackend):
    """The Claude backend, counting each read of a transcript: a window (from its window memo or
    not) and each whole mapping (``reads``), and each mapping's payload selection (``mapped``)."""

    def __init__(self, home: str) -> None:
        super().__init__(home, f"claude:{home}")
        self.reads: list[str] = []
        self.mapped: list[Payloads] = []

    def read(
        self,
        cand: Candidate,
        size: int,
        token: CancelToken,
        builder: MemoBuilder | None,
        payloads: Payloads = None,
    ) -> Inspection:
        self.reads.append(cand.session_id)
        self.mapped.append(payloads)
        return super().read(cand, size, token, builder, payloads)

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        self.reads.append(session_id)
        return super().inspect_window(session_id, first, last, token)


def titled_home(tmp_path: pathlib.Path, clock: Clock, sids: list[str]) -> pathlib.Path:
    """A Claude home of aged transcripts, each titled with its own id."""
    home = tmp_path / "claude"
    for i, sid in enumerate(sids):
        path = home / "projects" / "-w" / f"{sid}.jsonl"
        anchor = {"type": "user", "uuid": f"u{i}", "sessionId": sid, "timestamp": STAMP % i}
        anchor |= {"cwd": "/w", "message": {"role": "user", "content": f"ask {i}"}}
        apply(tmp_path, clock, ("write", str(path.relative_to(tmp_path)), line(anchor)), 2)
        apply(tmp_path, clock, ("append", str(path.relative_to(tmp_path)), title_line(sid, sid)), 2)
    clock.age(home, home / "projects")
    return home


def test_a_second_batch_reads_no_unchanged_log(tmp_path: pathlib.Path) -> None:
    clock = Clock()
    sids = [f"t{i}" for i in range(5)]
    home = titled_home(tmp_path, clock, sids)
    codex = tmp_path / "codex"  # an empty second member: the composite of "auto"
    counted = CountedClaude(str(home))
    backend = composite([counted, CodexBackend(str(codex), f"codex:{codex}")], "auto")
    assert Capabilities.of(backend).revisions is not None
    service = service_over(backend)
    first = titles(service, sids)
    assert [t["value"]["title"]["title"] for t in first] == sids
    assert set(counted.reads) == set(sids)
    counted.reads.clear()
    assert titles(service, sids) == first
    assert titles(service, sids[::-1]) == first[::-1]  # another batch: each id from the memo
    assert counted.reads == []
    rel = str((home / "projects" / "-w" / "t3.jsonl").relative_to(tmp_path))
    apply(tmp_path, clock, ("append", rel, title_line("t3", "renamed")), 1)
    again = titles(service, sids)
    assert again[3]["value"]["title"]["title"] == "renamed"
    assert again[:3] + again[4:] == first[:3] + first[4:]
    assert set(counted.reads) == {"t3"}  # the changed log alone
    counted.reads.clear()
    assert titles(service, sids) == again
    assert counted.reads == []


def test_a_title_costs_one_mapping_and_no_window_memo(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A title batch maps each transcript once, keeping only its titles whole (shapes.py): the
    title's own window comes from that read's shape, and no window memo is built for logs a
    listing only titles. A window other than the title's still reads the log whole. (In this
    process, where the mappings can be counted: test_import_shapes.py counts the worker's.)"""
    monkeypatch.setenv(shared.ENV, "0")
    clock = Clock()
    sids = [f"t{i}" for i in range(4)]
    home = titled_home(tmp_path, clock, sids)
    counted = CountedClaude(str(home))
    mappings = counted.mapped
    service = service_over(counted)
    got = titles(service, sids)
    assert [t["value"]["title"]["title"] for t in got] == sids
    assert len(mappings) == len(sids) and all(p is not None and p.whole for p in mappings)
    assert counted._windows.size == 0  # pyright: ignore[reportPrivateUsage]
    fresh = CountedClaude(str(home))
    for sid in sids:  # the shape's title window is the whole read's
        want = fresh.inspect(sid)
        window = counted.inspect_window(sid, 0, -1)
        assert window.title is not None and (window.meta, window.length) == (
            want.meta,
            len(want.events),
        )
        title = counted.inspect_window(sid, window.title, window.title)
        assert [e.raw for e in title.events] == [want.events[window.title].raw]
    mappings.clear()
    assert len(counted.inspect_window(sids[0], 0, 0).events) == 1
    assert mappings == [None]  # any other window: the log whole (and its memo)
