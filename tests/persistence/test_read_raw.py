"""Raw artifacts (tools.md §2.1): ``read_raw`` of the jsonl: backend returns a transcript's bytes
(raw: the whole file, torn tail included; Zstandard: the plaintext of the complete frames), never
changes a revision, and is resolved once at mount as a capability; a composite delegates it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import CancelToken
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.contract.capabilities import Capabilities
from dsh_query_server.persistence.contract.errors import (
    RAW_ARTIFACTS_UNSUPPORTED,
    SessionPersistenceCorruptionError,
    SessionRawArtifactsUnsupportedError,
)
from dsh_query_server.persistence.jsonl import (
    TRANSCRIPT,
    JsonlBackend,
    JsonlBackendError,
    escape_segment,
    project_dir,
    scan_frames,
)
from dsh_query_server.persistence.mount.composite import CompositeBackend
from dsh_query_server.persistence.mount.uri import open_backend
from tests.mcp_helpers import header, user

Outcome = tuple[str, object, object]


def ev(seq: int, kind: str, text: str = "x") -> Event:
    data: dict[str, object] = {"turn": 1} if kind != "user/message" else user(text)
    if kind.startswith("step/"):
        data["step"] = 1
    if kind == "turn/end":
        data["reason"] = {"kind": "completed"}
    value: dict[str, object] = {"type": kind, "seq": seq, "time": 10 + seq, "data": data}
    if kind == "user/message":
        value["surfaceOp"] = "append"
    return Event.from_value(value)


def write(
    root: Path, compression: str, sid: str, batches: list[list[str]], cwd: str = "/w/app"
) -> Path:
    backend = JsonlBackend(str(root), compression=compression)
    backend.create(header(sid, cwd, None, 5, 0))
    seq = 0
    for kinds in batches:
        backend.append(sid, [ev(seq + i, k, f"t{seq + i}") for i, k in enumerate(kinds)])
        seq += len(kinds)
    backend.close()
    encoding = "zstd" if compression == "zstd" else "none"
    return root / project_dir(cwd) / escape_segment(sid) / TRANSCRIPT[encoding]


def place(root: Path, sid: str, cwd: str, content: bytes, encoding: str = "none") -> Path:
    folder = root / project_dir(cwd) / escape_segment(sid)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TRANSCRIPT[encoding]
    path.write_bytes(content)
    return path


BATCHES = [["turn/start", "user/message"], ["step/start", "step/end", "turn/end"]]


def test_raw_artifact_is_the_whole_file_torn_tail_included(tmp_path: Path) -> None:
    path = write(tmp_path / "r", "none", "s-1", BATCHES)
    with open(path, "ab") as f:
        f.write(b'{"type":"turn/start","seq":5,"ti')
    before = os.stat(path)
    backend = JsonlBackend(str(tmp_path / "r"))
    snapshots = backend.list_snapshots()
    artifact = backend.read_raw("s-1")
    assert artifact is not None
    assert artifact.content == path.read_bytes()
    assert artifact.content.endswith(b'"ti')  # the torn fragment, byte for byte
    assert artifact.filename == "session.jsonl"
    assert artifact.meta == header("s-1", "/w/app", None, 5, 0)
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ctime_ns,
    )
    assert backend.list_snapshots() == snapshots  # same revision: nothing was written


def test_zstd_artifact_is_the_plaintext_of_complete_frames(tmp_path: Path) -> None:
    raw = write(tmp_path / "r", "none", "s-1", BATCHES)
    zst = write(tmp_path / "z", "zstd", "s-1", BATCHES)
    whole = zst.read_bytes()
    backend = JsonlBackend(str(tmp_path / "z"))
    artifact = backend.read_raw("s-1")
    assert artifact is not None and artifact.content == raw.read_bytes()
    # a torn final frame (half of a third batch's frame) is left out, as are its records
    third = write(tmp_path / "z3", "zstd", "s-1", [*BATCHES, ["turn/start"]]).read_bytes()
    frame = third[len(whole) :]
    zst.write_bytes(whole + frame[: len(frame) - 3])
    artifact = JsonlBackend(str(tmp_path / "z")).read_raw("s-1")
    assert artifact is not None and artifact.content == raw.read_bytes()
    inspected = JsonlBackend(str(tmp_path / "z")).inspect("s-1")
    # inspect recovers the torn frame's record (and closes its turn); the artifact does not
    assert [e.type for e in inspected.events[5:]] == ["turn/start", "turn/end"]


def test_missing_session_is_none(tmp_path: Path) -> None:
    assert JsonlBackend(str(tmp_path / "absent")).read_raw("s-1") is None
    write(tmp_path / "r", "none", "s-1", BATCHES)
    assert JsonlBackend(str(tmp_path / "r")).read_raw("s-2") is None


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"type":"session","version":0,"id":"s-1","createdAt":5,"delegationDepth":0}',
        b"{not json\n",
        b'{"type":"session","version":0,"id":"other","createdAt":5,"delegationDepth":0}\n',
        b'{"type":"session","version":0,"id":"s-1","createdAt":5}\n',
        b'{"type":"session","version":0,"id":"s-1","createdAt":5,"delegationDepth":0,'
        b'"sandboxMode":"x"}\n',
    ],
)
def test_invalid_header_line_is_corruption(tmp_path: Path, content: bytes) -> None:
    path = place(tmp_path, "s-1", "/w", content)
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path), compression="none").read_raw("s-1")
    assert str(info.value) == f'corrupt session log: invalid header line in "{path}"'


def test_a_foreign_format_version_is_copied_not_refused(tmp_path: Path) -> None:
    line = b'{"type":"session","version":2,"id":"s-1","createdAt":5,"delegationDepth":0}\n'
    place(tmp_path, "s-1", "/w", line + b"{torn")
    backend = JsonlBackend(str(tmp_path), compression="none")
    artifact = backend.read_raw("s-1")
    assert artifact is not None and artifact.content == line + b"{torn"


def test_zstd_frame_errors_are_corruption(tmp_path: Path) -> None:
    path = write(tmp_path, "zstd", "s-1", BATCHES)
    good = path.read_bytes()
    frames, _ = scan_frames(good)
    start, end = frames[1]
    broken = bytearray(good)
    broken[end - 1] ^= 0xFF  # the second frame's checksum
    path.write_bytes(bytes(broken))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).read_raw("s-1")
    assert str(info.value) == (
        f"corrupt Zstandard session log: frame at byte {start} failed validation"
    )
    path.write_bytes(good + b"\x00\x01\x02\x03\x04")
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).read_raw("s-1")
    assert str(info.value) == (
        f"corrupt Zstandard session log: invalid frame magic at byte {len(good)}"
    )
    path.write_bytes(good[:3])
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        JsonlBackend(str(tmp_path)).read_raw("s-1")
    assert str(info.value) == "empty or header-less Zstandard session log"


def test_other_failures_are_not_corruption(tmp_path: Path) -> None:
    path = write(tmp_path, "none", "s-1", BATCHES)
    (path.parent / TRANSCRIPT["zstd"]).write_bytes(b"")
    with pytest.raises(JsonlBackendError) as info:
        JsonlBackend(str(tmp_path), compression="none").read_raw("s-1")
    assert not isinstance(info.value, SessionPersistenceCorruptionError)
    assert "uses .jsonl.zstd" in str(info.value)


def test_a_cancelled_token_reads_nothing(tmp_path: Path) -> None:
    write(tmp_path, "none", "s-1", BATCHES)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Exception) as info:
        JsonlBackend(str(tmp_path)).read_raw("s-1", token)
    assert not isinstance(info.value, SessionPersistenceCorruptionError)


def test_locate_names_the_transcript_without_io(tmp_path: Path) -> None:
    h = header("a/b", "/w/app", None, 5, 0)
    undetermined = JsonlBackend(str(tmp_path / "none-yet"))
    found = undetermined.locate(h)
    assert found is not None and found.kind == "jsonl"
    assert found.path == str(tmp_path / "none-yet" / "--w-app--" / "a~002Fb" / "session.jsonl.zstd")
    assert not (tmp_path / "none-yet").exists()
    raw = JsonlBackend(str(tmp_path / "r"), compression="none").locate(h)
    assert raw is not None and raw.path.endswith("/a~002Fb/session.jsonl")
    assert (
        undetermined.locate(
            Header.from_value(
                {"version": 0, "id": "x", "createdAt": 1, "cwd": "", "delegationDepth": 0}
            )
        )
        is None
    )


def test_capabilities_resolve_raw_artifacts_once(tmp_path: Path) -> None:
    jsonl = open_backend(f"jsonl:{tmp_path / 'j'}?compression=none")
    sqlite = open_backend(f"sqlite:{tmp_path / 'db.sqlite'}")
    try:
        assert Capabilities.of(jsonl).raw is jsonl
        assert Capabilities.of(sqlite).raw is None
        jsonl.create(header("in-jsonl", "/w", None, 5, 0))
        jsonl.append("in-jsonl", [ev(0, "user/message")])
        sqlite.create(header("in-sqlite", "/w", None, 5, 0))
        sqlite.append("in-sqlite", [ev(0, "user/message")])
        composite = CompositeBackend([sqlite, jsonl], "auto")
        assert Capabilities.of(composite).raw is composite
        assert Capabilities.of(CompositeBackend([sqlite], "x")).raw is None
        artifact = composite.read_raw("in-jsonl")
        path = Path(tmp_path / "j" / "--w--" / "in-jsonl" / "session.jsonl")
        assert artifact is not None and artifact.content == path.read_bytes()
        with pytest.raises(SessionRawArtifactsUnsupportedError) as info:
            composite.read_raw("in-sqlite")
        assert str(info.value) == RAW_ARTIFACTS_UNSUPPORTED
        assert composite.read_raw("nowhere") is None
        assert composite.locate(header("in-jsonl", "/w", None, 5, 0)) is None
    finally:
        jsonl.close()
        sqlite.close()


# -- the property: read_raw's bytes, mounted as a raw transcript, read back as inspect does -------

KINDS = st.sampled_from(["turn/start", "user/message", "step/start", "step/end", "turn/end"])
TAILS = st.sampled_from(
    [
        b"",
        b'{"type":"tu',
        b"{not json\n",
        b'{"type":"turn/end","seq":99,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}\n',
        b"\n",
        b"\xff\xfe\n",
    ]
)


def outcome(root: Path, sid: str, compression: str) -> Outcome:
    try:
        found = JsonlBackend(str(root), compression=compression).inspect(sid)
    except Exception as exc:  # noqa: BLE001 - compared by class and message
        return ("error", type(exc).__name__, str(exc).replace(str(root), "<root>"))
    return ("ok", found.meta.to_value(), [e.to_value() for e in found.events])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.lists(KINDS, min_size=1, max_size=4), min_size=1, max_size=4),
    zstd=st.booleans(),
    cut=st.integers(0, 400),
    tail=TAILS,
)
def test_read_raw_decodes_to_what_inspect_returns(
    batches: list[list[str]], zstd: bool, cut: int, tail: bytes
) -> None:
    compression = "zstd" if zstd else "none"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        path = write(base / "src", compression, "s-p", batches)
        content = path.read_bytes()
        body = scan_frames(content)[0][0][1] if zstd else content.index(b"\n") + 1
        content = content[: max(body, len(content) - cut)] + tail  # a torn or damaged end
        path.write_bytes(content)
        before = os.stat(path)
        try:
            artifact = JsonlBackend(str(base / "src")).read_raw("s-p")
        except SessionPersistenceCorruptionError as exc:
            assert zstd  # a raw transcript with a valid header line is always copied
            assert outcome(base / "src", "s-p", compression) == (
                "error",
                "SessionPersistenceCorruptionError",
                str(exc),
            )
            return
        after = os.stat(path)
        assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
            before.st_size,
            before.st_mtime_ns,
            before.st_ino,
        )
        assert artifact is not None
        place(base / "back", "s-p", "/w/app", artifact.content)
        if not zstd:
            assert artifact.content == content
            assert outcome(base / "back", "s-p", "none") == outcome(base / "src", "s-p", "none")
            return
        # Zstandard: exactly the complete frames, so the log those frames alone hold
        frames, _ = scan_frames(content)
        place(base / "whole", "s-p", "/w/app", content[: frames[-1][1]], "zstd")
        assert outcome(base / "back", "s-p", "none") == outcome(base / "whole", "s-p", "zstd")
