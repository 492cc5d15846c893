"""The point lookup of a ``jsonl:`` root (``JsonlBackend.list_one``, semantics.md §3.0.5 step 4):
on random roots, whenever ``list`` succeeds, ``list_one(id)`` is exactly the header ``list``
lists for the id, and None for every id it does not list (persistence.md §4.3 escaping, §4.8:
what is listed, skipped, refused)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.cancel import CancelToken
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.jsonl import JsonlBackend, escape_segment, project_dir
from dsh_query_server.persistence.jsonl.frames import zstd_frame

# Ids whose escaped segments differ from them (§4.3), and a lone surrogate.
IDS = ["plain", "a/b", "a~b", "~002F", ".", "..", "x.jsonl", "😀", "\ud800", "s-1"]
# Two cwds that share a project directory (§4.2), one that does not, and none.
CWDS = ["/a/b-c", "/a-b/c", "/w", None]
SUFFIX = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}
OTHER = {"none": "zstd", "zstd": "none"}
AGED = time.time() - 3600.0

# What one session directory holds: a valid transcript; one damaged or torn after its header
# (listed: listing reads the header only); a header line still being written, one that is not
# JSON, an empty file, no transcript (none of these listed).
KINDS = ["valid", "valid", "valid", "damaged", "torn", "half-header", "bad-header", "empty"]
KINDS += ["no-transcript"]
# What makes the listing fail (then list_one may answer anything): a header naming another path
# (a misplaced directory, an unescaped name, another project), a transcript of the other
# encoding beside or instead of this one, the same id listed twice.
BREAKING = ["misplaced", "literal", "elsewhere", "opposite-too", "opposite", "duplicate"]


def header_line(session_id: str, cwd: str | None, created: int) -> bytes:
    value: dict[str, Any] = {"type": "session", "version": 0, "id": session_id}
    value["createdAt"] = created
    if cwd is not None:
        value["cwd"] = cwd
    value["delegationDepth"] = 0
    return jsoncodec.dumps(value) + b"\n"


def event_line(seq: int) -> bytes:
    return jsoncodec.dumps({"type": "plugin/x", "seq": seq, "time": seq, "data": {}}) + b"\n"


def encode(encoding: str, pieces: list[bytes]) -> bytes:
    """Raw lines as they are; for Zstandard, each piece one frame (the header its own)."""
    if encoding == "none":
        return b"".join(pieces)
    return b"".join(zstd_frame(piece) for piece in pieces)


def transcript(encoding: str, kind: str, session_id: str, cwd: str | None, created: int) -> bytes:
    head = header_line(session_id, cwd, created)
    if kind == "half-header":
        return head[: len(head) // 2] if encoding == "none" else zstd_frame(head)[:-3]
    if kind == "bad-header":
        return encode(encoding, [b'{"type":"session","id":\n', event_line(0)])
    if kind == "empty":
        return b""
    body = [head, event_line(0), event_line(1)]
    if kind == "damaged":
        body.append(b"{not json}\n")
    content = encode(encoding, body)
    if kind == "torn":
        content += b'{"type":"plugin/x","seq":2' if encoding == "none" else zstd_frame(b"x")[:-2]
    return content


@st.composite
def roots(draw: st.DrawFn) -> tuple[str, list[tuple[str, str | None, str, str, int]]]:
    """An encoding and session directories: (id, cwd, kind, naming, createdAt), the directory
    named by the id's segment under its cwd's project; a third of the roots also get one entry
    that may break the listing, or the same id again in another project."""
    encoding = draw(st.sampled_from(["none", "zstd"]))
    entry = st.tuples(
        st.sampled_from(IDS),
        st.sampled_from(CWDS),
        st.sampled_from(KINDS),
        st.just("escaped"),
        st.integers(0, 3),
    )
    entries = draw(st.lists(entry, max_size=7, unique_by=lambda e: e[0]))
    if entries and draw(st.integers(0, 2)) == 2:
        session_id, _, _, _, created = draw(st.sampled_from(entries))
        breaking = draw(st.sampled_from(BREAKING))
        cwd = draw(st.sampled_from(CWDS))
        if breaking == "duplicate":
            entries.append((session_id, cwd, draw(st.sampled_from(KINDS)), "escaped", created))
        elif breaking in ("literal", "elsewhere"):
            entries.insert(0, (session_id, cwd, "valid", breaking, created))
        else:
            entries.insert(0, (session_id, cwd, breaking, "escaped", created))
    return encoding, entries


def build(root: Path, encoding: str, entries: list[Any]) -> None:
    for session_id, cwd, kind, naming, created in entries:
        project = project_dir(cwd)
        name = escape_segment(session_id)
        if naming == "literal" and "/" not in session_id and session_id not in (".", ".."):
            name = session_id  # unescaped: a listing refuses it unless it needs no escaping
        elif naming == "elsewhere":
            project = project_dir("/elsewhere")
        if kind == "misplaced":
            project = project_dir("/misplaced")
        directory = root / project / name
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except (OSError, UnicodeEncodeError):
            continue  # a name this filesystem cannot hold
        if kind == "no-transcript":
            (directory / "notes.txt").write_bytes(b"x")
            continue
        written = OTHER[encoding] if kind == "opposite" else encoding
        path = directory / SUFFIX[written]
        if path.exists():
            continue  # the first entry for a directory wins
        path.write_bytes(transcript(written, kind, session_id, cwd, created))
        if kind == "opposite-too":
            other = OTHER[encoding]
            (directory / SUFFIX[other]).write_bytes(
                transcript(other, "valid", session_id, cwd, created)
            )
    (root / project_dir("/w")).mkdir(exist_ok=True)
    (root / project_dir("/w") / "stray-file").write_bytes(b"ignored")


def age(root: Path) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (AGED, AGED))
        os.utime(directory, (AGED, AGED))


def outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(exc).__name__, str(exc))


def raw(found: Header | None) -> bytes | None:
    return None if found is None else found.raw


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(roots(), st.booleans(), st.sampled_from(["configured", "auto", "warm"]))
def test_list_one_is_the_listed_header_whenever_list_succeeds(
    root_plan: tuple[str, list[Any]], aged: bool, mode: str
) -> None:
    encoding, entries = root_plan
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory) / "root"
        root.mkdir()
        build(root, encoding, entries)
        if aged:
            age(root)  # headers and directories old enough to be proven by their stat
        reference = JsonlBackend(str(root), compression=encoding, read_only=True)
        listed = outcome(lambda: reference.list(CancelToken()))
        if listed[0] != "ok":
            return  # the contract holds only where list succeeds
        by_id = {h.id: h for h in listed[1]}
        compression = "auto" if mode == "auto" else encoding
        backend = JsonlBackend(str(root), compression=compression, read_only=True)
        if mode == "warm":
            backend.list(CancelToken())  # headers kept from a listing, then looked up
        for session_id in [*IDS, *by_id, "absent", ""]:
            token = CancelToken()
            found = outcome(lambda i=session_id, t=token: raw(backend.list_one(i, t)))
            assert found == ("ok", raw(by_id.get(session_id))), session_id
            if session_id in by_id:  # the request's inspect finds what the lookup found
                inspected = outcome(lambda i=session_id, t=token: backend.inspect(i, t).meta.raw)
                assert inspected[0] == "error" or inspected[1] == by_id[session_id].raw
        assert found == ("ok", None)  # "" names no session


def test_a_lookup_reads_only_its_own_directory(tmp_path: Path, monkeypatch: Any) -> None:
    """A lookup of a listed session stats its own directory in each project and reads no other
    transcript; once its header is proven by the transcript's stat, it reads none at all."""
    for index in range(40):
        session_id = f"s{index}"
        folder = tmp_path / project_dir(CWDS[index % 3]) / session_id
        folder.mkdir(parents=True)
        (folder / "session.jsonl").write_bytes(
            transcript("none", "valid", session_id, CWDS[index % 3], index)
        )
    age(tmp_path)
    backend = JsonlBackend(str(tmp_path), compression="none", read_only=True)
    stats: list[str] = []
    opened: list[str] = []
    real_stat, real_open = os.stat, open

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    monkeypatch.setattr("builtins.open", counting_open)
    found = backend.list_one("s7", CancelToken())
    assert found is not None and found.id == "s7"
    target = tmp_path / project_dir(CWDS[1]) / "s7"
    assert opened == [str(target / "session.jsonl")]
    assert all("s7" in path or path == str(tmp_path) for path in stats)
    assert len(stats) <= 1 + 3 + 2  # the root, s7 in each project, s7's two transcripts
    stats.clear()
    opened.clear()
    again = backend.list_one("s7", CancelToken())
    assert again is found and opened == []  # the header its transcript's stat proves
