"""Session export (tools.md §2, §3.3) over real server processes: the CLI and the JSON-RPC method.
Round trip: the archive's session.jsonl files, mounted as a jsonl: root, read back event for
event identical to the sources."""

from __future__ import annotations

import hashlib
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.client import RpcError, StdioClient
from dsh_query_server.errors import QueryError
from dsh_query_server.export.archive import export_session
from dsh_query_server.export.collect import session_content
from dsh_query_server.export.encode import segment
from dsh_query_server.export.params import ExportOptions
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.jsonl import TRANSCRIPT, escape_segment, project_dir, scan_frames
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.mount.uri import open_backend
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.session.store import SessionStore
from tests.mcp_helpers import CORPUS, event, header, private_env, user, write_corpus

pytestmark = [pytest.mark.wire, pytest.mark.slow]  # the CLI and a server per test

LINEAGE = [
    "session.jsonl",
    "subagents/s-child/session.jsonl",
    "subagents/s-leaf/session.jsonl",
    "subagents/s-side/session.jsonl",
    "subagents/s-ghost/session.jsonl",
]
IDS = ["s-root", "s-child", "s-leaf", "s-side", "s-ghost"]


def export_cli(tmp: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "export", *args],
        env=private_env(tmp),
        cwd=str(cwd or tmp),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def client(tmp: Path, uri: str, **init: Any) -> StdioClient:
    return StdioClient(
        ["--persistence", uri],
        env=private_env(tmp),
        initialization_options={"index": ":memory:", **init},
    )


def logical(uri: str, sid: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    backend = open_backend(uri)
    try:
        found = backend.inspect(sid)
    finally:
        backend.close()
    return found.meta.to_value(), [e.to_value() for e in found.events]


def mount_archive(archive: Path, root: Path, ids: list[str]) -> str:
    """Place each exported session.jsonl where a jsonl: root keeps that session (§4.1–§4.3)."""
    with zipfile.ZipFile(archive) as z:
        for name, sid in zip(z.namelist(), ids, strict=True):
            data = z.read(name)
            cwd = Header.from_json(data.split(b"\n", 1)[0]).cwd
            folder = root / project_dir(cwd if isinstance(cwd, str) else None) / escape_segment(sid)
            folder.mkdir(parents=True)
            (folder / TRANSCRIPT["none"]).write_bytes(data)
    return f"jsonl:{root}"


def test_whole_lineage_round_trip(tmp_path: Path) -> None:
    source = f"jsonl:{tmp_path / 'ex'}"
    write_corpus(source + "?compression=none")
    out = tmp_path / "a.zip"
    done = export_cli(tmp_path, "s-root", "--descendants", "-o", str(out), "--persistence", source)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{out}\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == LINEAGE
        # each entry holds its transcript's exact bytes (§3.3); s-leaf's: 5 lines, no closers
        for name, sid in zip(LINEAGE, IDS, strict=True):
            assert z.read(name) == transcript(tmp_path / "ex", sid).read_bytes()
        leaf = z.read(LINEAGE[2]).split(b"\n")
    assert len(leaf) == 6 and leaf[-1] == b"" and b'"interrupted"' not in b"".join(leaf)
    copy = mount_archive(out, tmp_path / "back", IDS)
    for sid in IDS:
        assert logical(copy, sid) == logical(source, sid)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def transcript(root: Path, sid: str, encoding: str = "none") -> Path:
    cwd = next(c[1] for c in CORPUS if c[0] == sid)
    return root / project_dir(cwd) / escape_segment(sid) / TRANSCRIPT[encoding]


def test_zstd_root_exports_the_plaintext_of_its_frames(tmp_path: Path) -> None:
    source = f"jsonl:{tmp_path / 'ex'}"
    write_corpus(source + "?compression=zstd")
    write_corpus(f"jsonl:{tmp_path / 'plain'}?compression=none")
    out = tmp_path / "z.zip"
    done = export_cli(tmp_path, "s-root", "--descendants", "-o", str(out), "--persistence", source)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == LINEAGE
        for name, sid in zip(LINEAGE, IDS, strict=True):  # the same lines a raw root holds
            assert z.read(name) == transcript(tmp_path / "plain", sid).read_bytes()
    copy = mount_archive(out, tmp_path / "back", IDS)
    for sid in IDS:
        assert logical(copy, sid) == logical(source, sid)


def test_read_raw_failures_keep_their_class(tmp_path: Path) -> None:
    """§2.6: corruption found by read_raw is CORRUPT_SESSION, any other failure is
    PERSISTENCE_FAILED, each with its own message, over a real server."""
    source = f"jsonl:{tmp_path / 'ex'}"
    write_corpus(source + "?compression=zstd")
    leaf = transcript(tmp_path / "ex", "s-leaf", "zstd")
    content = bytearray(leaf.read_bytes())
    start, end = scan_frames(bytes(content))[0][1]
    content[end - 1] ^= 0xFF  # the batch frame's checksum: listing (header frame only) still works
    leaf.write_bytes(bytes(content))
    c = client(tmp_path, source)
    try:
        failures = []
        for sid, descendants in (("s-leaf", False), ("s-root", True)):
            with pytest.raises(RpcError) as info:
                c.request(
                    "sessionQuery/exportSession",
                    {
                        "sessionId": sid,
                        "outputPath": str(tmp_path / f"{sid}.zip"),
                        "includeDescendants": descendants,
                    },
                )
            failures.append((info.value.code, info.value.data_code, info.value.message))
    finally:
        c.close()
    corrupt = (
        'stored session "s-leaf" is corrupt: corrupt Zstandard session log: frame at '
        f"byte {start} failed validation"
    )
    assert failures == [(-32803, "SESSION_QUERY_CORRUPT_SESSION", corrupt)] * 2
    assert not list(tmp_path.glob("*.zip")) and not list(tmp_path.glob("*.tmp"))


def test_a_transcript_unreadable_after_listing_is_a_persistence_failure(tmp_path: Path) -> None:
    """The export lists, then reads: a transcript that became unreadable in between fails
    read_raw with an OS error, which is PERSISTENCE_FAILED (not corruption, not "vanished")."""
    write_corpus(f"jsonl:{tmp_path / 'ex'}?compression=none")
    binding = PersistenceBinding()
    mounted = binding.mount(open_backend(f"jsonl:{tmp_path / 'ex'}"))
    assert mounted.logs.raw("s-leaf", CancelToken()) is not None  # jsonl: raw artifacts
    service = SessionQueryService(SessionStore(), binding)
    assert {r.header.id for r in service.corpus(CancelToken())} == set(IDS)
    leaf = transcript(tmp_path / "ex", "s-leaf")
    assert session_content(service, "s-leaf", CancelToken(), descendant=True) == leaf.read_bytes()
    leaf.unlink()
    leaf.mkdir()  # still found where a transcript lives, but not readable as one
    with pytest.raises(QueryError) as info:
        session_content(service, "s-leaf", CancelToken(), descendant=True)
    assert info.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert info.value.message == (
        f"failed to read the stored log of session \"s-leaf\": [Errno 21] Is a directory: '{leaf}'"
    )
    leaf.rmdir()
    with pytest.raises(QueryError) as info:
        session_content(service, "s-leaf", CancelToken(), descendant=True)
    assert (info.value.code, info.value.message) == (
        "SESSION_QUERY_EXPORT_FAILED",
        'subagent "s-leaf" has no stored log artifact',
    )


def test_sqlite_exports_its_logical_log(tmp_path: Path) -> None:
    uri = f"sqlite:{tmp_path / 'ex.db'}"
    write_corpus(uri)
    out = tmp_path / "leaf.zip"
    done = export_cli(tmp_path, "s-leaf", "-o", str(out), "--persistence", uri)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as z:
        assert z.namelist() == ["session.jsonl"]
        lines = z.read("session.jsonl").split(b"\n")
    assert lines[0] == (
        b'{"type":"session","version":0,"id":"s-leaf","createdAt":1700000120000,'
        b'"cwd":"/w/app","parentSession":"s-child","origin":"subagent",'
        b'"delegationDepth":2}'
    )
    assert lines[5:] == [
        b'{"type":"step/end","seq":4,"time":1700000124000,"data":{"turn":1,"step":1}}',
        b'{"type":"turn/end","seq":5,"time":1700000124000,"data":{"turn":1,"reason":'
        b'{"kind":"interrupted"}}}',
        b"",
    ]
    copy = mount_archive(out, tmp_path / "back", ["s-leaf"])
    assert logical(copy, "s-leaf") == logical(uri, "s-leaf")


def test_live_session_with_lag(tmp_path: Path) -> None:
    root = f"jsonl:{tmp_path / 'live'}"
    out = tmp_path / "live.zip"
    c = client(tmp_path, root, checkpoint={"mode": "manual"})
    try:
        c.request("sessionStore/create", {"header": {"id": "s-live", "createdAt": 1, "cwd": "/w"}})
        c.request(
            "sessionStore/append",
            {
                "sessionId": "s-live",
                "events": [{"type": "user/message", "surfaceOp": "append", "data": user("one")}],
            },
        )
        c.request("sessionStore/checkpoint", {"sessionId": "s-live"})
        c.request(
            "sessionStore/append",
            {
                "sessionId": "s-live",
                "events": [{"type": "user/message", "surfaceOp": "append", "data": user("two")}],
            },
        )
        result = c.request(
            "sessionQuery/exportSession", {"sessionId": "s-live", "outputPath": str(out)}
        )
        live = c.request("sessionQuery/readSession", {"sessionId": "s-live"})
    finally:
        c.close()
    assert result["path"] == str(out) and result["bytes"] == out.stat().st_size
    assert [e["name"] for e in result["entries"]] == ["session.jsonl"]
    with zipfile.ZipFile(out) as z:
        lines = z.read("session.jsonl").split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    assert len(logical(root, "s-live")[1]) == 1  # the root still holds only seq 0
    copy = mount_archive(out, tmp_path / "back", ["s-live"])
    assert logical(copy, "s-live")[1] == live["events"]


def test_scoped_export_and_hidden_root(tmp_path: Path) -> None:
    source = f"jsonl:{tmp_path / 'ex'}"
    write_corpus(source + "?compression=none")
    c = client(tmp_path, source)
    try:
        result = c.request(
            "sessionQuery/exportSession",
            {
                "sessionId": "s-root",
                "outputPath": str(tmp_path / "s.zip"),
                "includeDescendants": True,
                "workspaceRoots": ["/w/app"],
            },
        )
        answers = []
        for sid in ("s-side", "s-nope"):
            with pytest.raises(RpcError) as info:
                c.request(
                    "sessionQuery/exportSession",
                    {
                        "sessionId": sid,
                        "outputPath": str(tmp_path / f"{sid}.zip"),
                        "workspaceRoots": ["/w/app"],
                    },
                )
            answers.append(
                (info.value.code, info.value.data_code, info.value.message.replace(sid, "ID"))
            )
        with pytest.raises(RpcError) as relative:
            c.request("sessionQuery/exportSession", {"sessionId": "s-root", "outputPath": "a.zip"})
        with pytest.raises(RpcError) as exists:
            c.request(
                "sessionQuery/exportSession",
                {"sessionId": "s-root", "outputPath": str(tmp_path / "s.zip")},
            )
        again = c.request(
            "sessionQuery/exportSession",
            {"sessionId": "s-child", "outputPath": str(tmp_path / "s.zip"), "overwrite": True},
        )
    finally:
        c.close()
    assert [e["name"] for e in result["entries"]] == LINEAGE[:3]
    assert [e.get("sessionId") for e in result["entries"]] == IDS[:3]
    assert (
        answers[0]
        == answers[1]
        == (-32803, "SESSION_QUERY_SESSION_NOT_FOUND", 'session "ID" not found')
    )
    assert (relative.value.code, relative.value.message) == (
        -32602,
        "outputPath must be an absolute path",
    )
    assert exists.value.data_code == "SESSION_QUERY_EXPORT_FAILED"
    assert exists.value.message == f'export target "{tmp_path / "s.zip"}" already exists'
    assert [e["sessionId"] for e in again["entries"]] == ["s-child"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".zip", ".tmp")) == ["s.zip"]


def test_names_and_default_file(tmp_path: Path) -> None:
    assert segment("team/a b") == "team_a_b" and segment("a/b😀") == "a_b__"
    uri = f"jsonl:{tmp_path / 'ex'}"
    backend = open_backend(uri + "?compression=none")
    backend.create(header("team/a b", "/w", None, 5, 0))
    backend.append("team/a b", [event(0, 5, ("user/message", user("hi"), None))])
    backend.create(header("team_a_b", "/w", "team/a b", 6, 1))
    backend.append("team_a_b", [event(0, 6, ("user/message", user("x"), None))])
    backend.create(header("team?a b", "/w", "team/a b", 7, 1))
    backend.append("team?a b", [event(0, 7, ("user/message", user("y"), None))])
    backend.close()
    done = export_cli(tmp_path, "team/a b", "--descendants", "--persistence", uri, "--json")
    assert done.returncode == 0, done.stderr
    target = tmp_path / "dsh-session-team_a_b.zip"
    with zipfile.ZipFile(target) as z:
        assert z.namelist() == [
            "session.jsonl",
            "subagents/team_a_b/session.jsonl",
            "subagents/team_a_b~2/session.jsonl",
        ]
    streamed = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_query_server.cli",
            "export",
            "team/a b",
            "-o",
            "-",
            "--persistence",
            uri,
        ],
        env=private_env(tmp_path),
        cwd=str(tmp_path),
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert streamed.returncode == 0
    assert streamed.stdout[:2] == b"PK"
    missing = export_cli(tmp_path, "s-nope", "--persistence", uri)
    assert missing.returncode != 0
    assert missing.stderr.strip() == (
        'error SESSION_QUERY_SESSION_NOT_FOUND: session "s-nope" not found'
    )


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


def test_media_entries(tmp_path: Path) -> None:
    store = tmp_path / "attachments"
    digest = hashlib.sha256(PNG).hexdigest()
    (store / "objects" / digest[:2]).mkdir(parents=True)
    (store / "objects" / digest[:2] / digest).write_bytes(PNG)
    image = {
        "type": "image",
        "attachment": {"id": f"sha256:{digest}", "mediaType": "image/png", "bytes": len(PNG)},
    }
    data = {
        "id": "m1",
        "role": "user",
        "source": {"kind": "user"},
        "content": [{"type": "text", "text": "look"}, image],
    }
    uri = f"jsonl:{tmp_path / 'ex'}"
    backend = open_backend(uri + "?compression=none")
    backend.create(header("s-img", "/w", None, 5, 0))
    backend.append(
        "s-img",
        [
            Event.from_value(
                {"type": "user/message", "seq": 0, "time": 6, "data": data, "surfaceOp": "append"}
            )
        ],
    )
    backend.close()
    out = tmp_path / "m.zip"
    c = client(tmp_path, uri, attachments=str(store))
    try:
        result = c.request(
            "sessionQuery/exportSession", {"sessionId": "s-img", "outputPath": str(out)}
        )
        bare = c.request(
            "sessionQuery/exportSession",
            {"sessionId": "s-img", "outputPath": str(tmp_path / "bare.zip"), "includeMedia": False},
        )
        (store / "objects" / digest[:2] / digest).write_bytes(PNG + b"!")
        with pytest.raises(RpcError) as bad:
            c.request(
                "sessionQuery/exportSession",
                {"sessionId": "s-img", "outputPath": str(tmp_path / "bad.zip")},
            )
    finally:
        c.close()
    assert result["entries"][1] == {
        "name": f"media/sha256:{digest}.png",
        "bytes": len(PNG),
        "attachmentId": f"sha256:{digest}",
    }
    with zipfile.ZipFile(out) as z:
        assert z.read(f"media/sha256:{digest}.png") == PNG
    assert [e["name"] for e in bare["entries"]] == ["session.jsonl"]
    assert bad.value.message == (
        f'media "sha256:{digest}" could not be read: '
        "Stored attachment failed integrity verification."
    )
    assert not (tmp_path / "bad.zip").exists()


@given(st.text(min_size=1, max_size=20))
def test_segment_is_safe(session_id: str) -> None:
    seg = segment(session_id)
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in seg)
    assert len(seg) == len(session_id.encode("utf-16-le")) // 2


class FiresAtCheck(CancelToken):
    """A token that fires at its n-th check, so a test can cancel at every point where the
    export (or a backend below it) looks at its token, one after another."""

    __slots__ = ("_left", "checks")

    def __init__(self, n: int) -> None:
        super().__init__()
        self._left = n
        self.checks = 0

    @property
    def cancelled(self) -> bool:
        self.checks += 1
        if self._left == 0:
            self.cancel()
        self._left -= 1
        return super().cancelled

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise SessionQueryCancelled("cancelled")


def test_cancelled_at_any_point_leaves_nothing(tmp_path: Path) -> None:
    """§2.4 step 4: on cancellation the temporary file is removed and nothing is left at
    outputPath; the answer is ABORTED. Cancelled at each of the export's checks in turn, until one
    run completes."""
    write_corpus(f"jsonl:{tmp_path / 'ex'}?compression=none")
    binding = PersistenceBinding()
    binding.mount(open_backend(f"jsonl:{tmp_path / 'ex'}"))
    service = SessionQueryService(SessionStore(), binding)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "s.zip"
    options = ExportOptions(attachments=None, level=6)
    n = 0
    while True:
        token = FiresAtCheck(n)
        try:
            export_session(
                service, "s-root", str(target), options, include_descendants=True, token=token
            )
        except QueryError as exc:
            assert (exc.code, exc.message) == (
                "SESSION_QUERY_ABORTED",
                "session query request cancelled",
            )
            assert list(out_dir.iterdir()) == []
            n += 1
            continue
        break
    assert n > len(IDS)  # the token was looked at, and honoured, at least once per session
    with zipfile.ZipFile(target) as z:
        assert z.namelist() == LINEAGE
    assert [p.name for p in out_dir.iterdir()] == ["s.zip"]
