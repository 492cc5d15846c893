"""The sidebar's session labels use the title memo (query/titlememo.py): a persisted log whose
title was read at the revision its mount lists now is labelled from that read (its title and
length) without reading the log, and a label read fills the memo as a title batch does.

Over the wire, the sessions view of a mounted foreign home shows each session's current title
through changes to its logs; in process, by count, a second page of labels reads no titled log
whose revision is unchanged, and a changed one is read alone."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from dsh_query_server.cancel import CancelToken
from dsh_query_server.core.config import build_config
from dsh_query_server.core.runtime import Runtime
from dsh_query_server.server.tree.labels import read_labels
from tests.persistence.importing.test_import_listing import STAMP, Clock, line
from tests.persistence.importing.test_import_title_memo import CountedClaude, title_line
from tests.tree_helpers import call, client_fixture, walk  # noqa: F401 - the client fixture

pytestmark = pytest.mark.wire


def claude_home(root: pathlib.Path, clock: Clock) -> pathlib.Path:
    """t0 and t1 titled, t2 by its first message alone (the importer's fallback title); every
    file and folder aged past the proofs' safe age."""
    home = root / "claude"
    folder = home / "projects" / "-w"
    folder.mkdir(parents=True)
    for i in range(3):
        anchor = {"type": "user", "uuid": f"u{i}", "sessionId": f"t{i}", "timestamp": STAMP % i}
        anchor |= {"cwd": "/w", "message": {"role": "user", "content": f"ask {i}"}}
        title = title_line(f"t{i}", f"title {i}") if i < 2 else b""
        (folder / f"t{i}.jsonl").write_bytes(line(anchor) + title)
        clock.age(folder / f"t{i}.jsonl")
    clock.age(folder, home / "projects", home)
    return home


def append(path: pathlib.Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


async def sessions(client: Any) -> dict[str, Any]:
    """The session nodes of the sessions view, by id."""
    found, _ = await walk(client, "sessions")
    return {
        n["resource"]["sessionId"]: n
        for n in found.values()
        if n.get("contextValue", "").startswith("session.")
    }


async def labels(client: Any) -> dict[str, str]:
    return {sid: node["label"] for sid, node in (await sessions(client)).items()}


async def test_labels_follow_the_titles_through_changes(client, tmp_path):
    clock = Clock()
    home = claude_home(tmp_path, clock)
    await call(client, "sessionPersistence/mount", {"uri": f"claude:{home}"})
    first = {"t0": "title 0", "t1": "title 1", "t2": "ask 2"}
    assert await labels(client) == first
    nodes = await sessions(client)
    assert await sessions(client) == nodes  # the titled ones from the memo: the same nodes
    append(home / "projects" / "-w" / "t1.jsonl", title_line("t1", "renamed now"))
    assert await labels(client) == {**first, "t1": "renamed now"}
    append(home / "projects" / "-w" / "t2.jsonl", title_line("t2", "titled aged"))
    clock.age(home / "projects" / "-w" / "t2.jsonl")
    expected = {"t0": "title 0", "t1": "renamed now", "t2": "titled aged"}
    assert await labels(client) == expected
    titles = await call(client, "sessionQuery/readTitles", {"sessionIds": ["t0", "t1", "t2"]})
    assert [t["value"]["title"]["title"] for t in titles] == list(expected.values())
    assert await labels(client) == expected


def test_a_second_page_of_labels_reads_no_titled_log(tmp_path):
    clock = Clock()
    home = claude_home(tmp_path, clock)
    runtime = Runtime(
        build_config({"persistence": None, "index": ":memory:", "search": {"openAt": "never"}}),
        None,
    )
    counted = CountedClaude(str(home))
    runtime.binding.mount(counted)
    try:
        service = runtime.service

        def page() -> dict[str, Any]:
            infos = read_labels(service, service.corpus(), CancelToken())
            return {sid: (i.title or i.first_message, i.events) for sid, i in infos.items()}

        first = page()
        assert {sid: label for sid, (label, _) in first.items()} == {
            "t0": "title 0",
            "t1": "title 1",
            "t2": "ask 2",
        }
        assert set(counted.reads) == {"t0", "t1", "t2"}
        counted.reads.clear()
        assert page() == first
        assert counted.reads == []  # t2 too: the importer titles it by its first message
        counted.reads.clear()
        # a title batch answers from what the labels read, and fills nothing new
        titles = service.read_titles(["t0", "t1", "t2"], CancelToken())
        assert [t.status for t in titles] == ["fulfilled"] * 3
        assert counted.reads == []
        append(home / "projects" / "-w" / "t0.jsonl", title_line("t0", "renamed"))
        clock.age(home / "projects" / "-w" / "t0.jsonl")
        assert page() == {**first, "t0": ("renamed", first["t0"][1] + 1)}
        assert set(counted.reads) == {"t0"}
    finally:
        runtime.close()
