"""The jsonl root survey by directory proofs (persistence/jsonl/proofs.py) against the full survey
(persistence.md §4.7–§4.9; issue 12 §4): on random roots that change between requests, every
request sees exactly the sessions, revisions and errors the full survey sees."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import errors, jsoncodec
from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend, escape_segment, project_dir
from dsh_query_server.persistence.jsonl.proofs import SAFE_AGE_NS, RootSurveyor
from dsh_query_server.persistence.jsonl.survey import survey_root
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.session.store import SessionStore
from tests.builders import transcript_header_line

CWDS = ("/w/a", "/w/b", "/w/c")
IDS = ("s0", "s1", "s2", "s3", "s4", "s5")
AGED = time.time() - 3600.0  # an hour ago: safely older than any proof's margin


def event(seq: int) -> bytes:
    return jsoncodec.dumps({"type": "plugin/x", "seq": seq, "time": seq, "data": {}}) + b"\n"


def session_dir(root: Path, session_id: str, cwd: str) -> Path:
    return root / project_dir(cwd) / escape_segment(session_id)


def write_session(root: Path, session_id: str, cwd: str, created: int = 1) -> None:
    directory = session_dir(root, session_id, cwd)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "session.jsonl").write_bytes(
        transcript_header_line(session_id, cwd, created) + event(0)
    )


def session_dirs(root: Path) -> list[Path]:
    return sorted(d for p in root.iterdir() if p.is_dir() for d in p.iterdir() if d.is_dir())


def age(root: Path) -> None:
    """Make every directory and file look old (as a root written long ago does)."""
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (AGED, AGED), follow_symlinks=False)
        os.utime(directory, (AGED, AGED))


def outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(exc).__name__, str(exc))


def pick(data: st.DataObject, items: list[Path]) -> Path | None:
    return data.draw(st.sampled_from(items)) if items else None


def mutate(root: Path, outside: Path, kind: str, data: st.DataObject) -> None:
    sessions = session_dirs(root)
    target = pick(data, sessions)
    cwd = data.draw(st.sampled_from(CWDS))
    if kind == "add":
        write_session(root, data.draw(st.sampled_from(IDS)), cwd, data.draw(st.integers(1, 9)))
    elif kind == "remove" and target is not None:
        shutil.rmtree(target)
    elif kind == "rename" and target is not None:
        # Another name in the same or another project: its header no longer names its path.
        destination = root / project_dir(cwd) / data.draw(st.sampled_from(IDS))
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            target.rename(destination)
    elif kind == "replace" and target is not None:
        for transcript in list(target.iterdir()):
            replacement = target / "replacement.tmp"
            replacement.write_bytes(
                transcript_header_line(target.name, cwd, data.draw(st.integers(1, 9)))
            )
            replacement.rename(transcript)
    elif kind == "rewrite" and target is not None:
        # The header rewritten in place with another createdAt (the same size), its old mtime
        # put back: only the ctime tells the transcript's stat apart.
        for transcript in target.iterdir():
            if transcript.is_symlink():
                continue  # a dangling link made by "dangling": nothing to rewrite
            before = os.stat(transcript)
            content = transcript.read_bytes()
            created = data.draw(st.integers(1, 9))
            start = content.find(b'"createdAt":') + len(b'"createdAt":')
            if start < len(b'"createdAt":'):
                continue  # an empty opposite-suffix file: no header to rewrite
            with open(transcript, "r+b") as file:
                file.seek(start)
                file.write(str(created).encode())
            os.utime(transcript, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif kind == "retarget" and target is not None:
        # A header that names another session: the listing fails its identity check.
        for transcript in target.iterdir():
            transcript.write_bytes(
                transcript_header_line("s9", data.draw(st.sampled_from(CWDS))) + event(0)
            )
    elif kind == "append" and target is not None:
        for transcript in target.iterdir():
            with open(transcript, "ab") as file:
                file.write(event(1))
    elif kind == "flip" and target is not None:
        for transcript in list(target.iterdir()):
            flipped = "session.jsonl" if transcript.name.endswith(".zstd") else "session.jsonl.zstd"
            transcript.rename(target / flipped)
    elif kind == "opposite" and target is not None:
        (target / "session.jsonl.zstd").write_bytes(b"")
    elif kind == "unopposite" and target is not None:
        (target / "session.jsonl.zstd").unlink(missing_ok=True)
    elif kind == "flat":
        project = root / project_dir(cwd)
        project.mkdir(parents=True, exist_ok=True)
        (project / "loose.jsonl").write_bytes(b"")
    elif kind == "unflat":
        for project in root.iterdir():
            (project / "loose.jsonl").unlink(missing_ok=True)
    elif kind == "dangling" and target is not None:
        link = target / "session.jsonl.zstd"
        if not os.path.lexists(link):
            link.symlink_to(outside / target.name)
    elif kind == "undangle":
        for name in IDS:  # dangling links' targets appear; their directories do not change
            (outside / name).write_bytes(b"")
    elif kind == "age":
        age(root)


MUTATIONS = [
    "add",
    "remove",
    "rename",
    "replace",
    "append",
    "rewrite",
    "retarget",
    "flip",
    "opposite",
    "unopposite",
    "flat",
    "unflat",
    "dangling",
    "undangle",
    "age",
]


def full_survey_backend(root: Path) -> JsonlBackend:
    """The reference: the same backend, surveying the whole root on every request."""
    backend = JsonlBackend(str(root), compression="none", read_only=True)
    backend._survey = lambda token: survey_root(backend.root, token)
    return backend


def requests(backend: JsonlBackend) -> list[Any]:
    token = CancelToken()  # one request: it lists, then looks sessions up (§3.0.5)
    answers = [
        outcome(
            lambda: sorted(
                (s.header.id, s.revision, s.header.raw) for s in backend.list_snapshots(token)
            )
        )
    ]
    answers += [outcome(lambda i=i: backend.inspect(i, token).meta.raw) for i in IDS[:3]]
    answers.append(outcome(lambda: sorted(h.raw for h in backend.list(NULL_TOKEN))))
    return answers


def lookups(backend: JsonlBackend, full: JsonlBackend) -> None:
    """``list_one`` (ListedLookup) answers, for every id, what looking for the id in the full
    survey's ``list`` answers whenever that listing succeeds, each in a request of its own
    (semantics.md §3.0.5 step 4: it need not fail because of other sessions)."""
    listed = outcome(lambda: full.list(CancelToken()))
    if listed[0] != "ok":
        return
    for session_id in (*IDS, "s9"):
        fast = outcome(lambda i=session_id: _raw(backend.list_one(i, CancelToken())))
        expected = _raw(next((h for h in listed[1] if h.id == session_id), None))
        assert fast == ("ok", expected)


def _raw(found: Header | None) -> Any:
    return None if found is None else found.raw


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=12), st.data())
def test_proofs_answer_as_the_full_survey_on_changing_roots(
    steps: list[str], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root, outside = Path(directory) / "root", Path(directory) / "outside"
        root.mkdir()
        outside.mkdir()
        for index, session_id in enumerate(IDS[:4]):
            write_session(root, session_id, CWDS[index % 2])
        age(root)
        fast = JsonlBackend(str(root), compression="none", read_only=True)
        full = full_survey_backend(root)
        surveyor = RootSurveyor(str(root))
        for step in ["age", *steps]:
            mutate(root, outside, step, data)
            assert outcome(lambda: surveyor.survey(NULL_TOKEN)) == outcome(
                lambda: survey_root(str(root), NULL_TOKEN)
            )
            assert requests(fast) == requests(full)
            lookups(fast, full)


def test_an_unchanged_aged_root_is_proven_without_reading_a_directory(tmp_path: Path) -> None:
    for index, session_id in enumerate(IDS):
        write_session(tmp_path, session_id, CWDS[index % 3])
    age(tmp_path)
    surveyor = RootSurveyor(str(tmp_path))
    first = surveyor.survey(NULL_TOKEN)
    reads = surveyor.reads
    assert reads == 1 + 3 + len(IDS)  # the root, each project, each session directory
    again = surveyor.survey(NULL_TOKEN)
    assert again == first == survey_root(str(tmp_path), NULL_TOKEN)
    assert all(a is b for a, b in zip(again, first, strict=True))  # unchanged: the same records
    assert surveyor.reads == reads
    # One session gains an opposite-suffix transcript: only its directory is read again.
    changed = session_dir(tmp_path, "s1", CWDS[1])
    (changed / "session.jsonl.zstd").write_bytes(b"")
    third = surveyor.survey(NULL_TOKEN)
    assert surveyor.reads == reads + 1
    assert third == survey_root(str(tmp_path), NULL_TOKEN)
    assert [s.kinds for s in third if s.name == "s1"] == [("zstd", "none")]


def test_a_recently_changed_directory_is_read_again(tmp_path: Path) -> None:
    """Git's racy case: a change in the same timestamp tick as the read that would prove the
    directory leaves its times as they were, so a young directory proves nothing."""
    write_session(tmp_path, "s0", CWDS[0])
    now = [time.time_ns()]
    surveyor = RootSurveyor(str(tmp_path), clock=lambda: now[0])
    surveyor.survey(NULL_TOKEN)
    reads = surveyor.reads
    surveyor.survey(NULL_TOKEN)
    assert surveyor.reads == reads + 3  # all three directories are younger than the margin
    now[0] += SAFE_AGE_NS + 10**9
    surveyor.survey(NULL_TOKEN)  # read once more, now old enough to prove
    reads = surveyor.reads
    surveyor.survey(NULL_TOKEN)
    assert surveyor.reads == reads


def test_a_dangling_transcript_link_is_not_proven_absent(tmp_path: Path) -> None:
    write_session(tmp_path, "s0", CWDS[0])
    directory = session_dir(tmp_path, "s0", CWDS[0])
    outside = tmp_path / "outside"
    outside.mkdir()
    (directory / "session.jsonl.zstd").symlink_to(outside / "target")
    age(tmp_path)
    surveyor = RootSurveyor(str(tmp_path))
    assert [s.kinds for s in surveyor.survey(NULL_TOKEN)] == [("none",)]
    before = os.stat(directory)
    (outside / "target").write_bytes(b"")  # the link's directory does not change
    assert os.stat(directory) == before
    assert [s.kinds for s in surveyor.survey(NULL_TOKEN)] == [("zstd", "none")]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_listing_a_proven_root_reads_no_transcript_header_line(
    tmp_path: Path, compression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = JsonlBackend(str(tmp_path), compression=compression)
    for session_id in IDS:
        backend.create(Header.build(version=0, id=session_id, createdAt=1, cwd=CWDS[0]))
        backend.append(session_id, [make_event("plugin/x", 0, 0, {})])
    age(tmp_path)
    reader = JsonlBackend(str(tmp_path), compression=compression, read_only=True)
    listed = reader.list_snapshots()
    opened: list[str] = []
    real_open = open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    assert reader.list_snapshots() == listed
    assert opened == []
    assert reader._surveyor.survey(NULL_TOKEN) == survey_root(str(tmp_path), NULL_TOKEN)


def test_a_growing_transcript_is_compared_with_its_latest_stat(tmp_path: Path) -> None:
    write_session(tmp_path, "s0", CWDS[0])
    age(tmp_path)
    surveyor = RootSurveyor(str(tmp_path))
    [first] = surveyor.survey(NULL_TOKEN)
    with open(session_dir(tmp_path, "s0", CWDS[0]) / "session.jsonl", "ab") as file:
        file.write(event(1))  # an append: the directory is unchanged, the transcript's stat moves
    [grown] = surveyor.survey(NULL_TOKEN)
    assert grown.keys != first.keys and grown == survey_root(str(tmp_path), NULL_TOKEN)[0]
    [again] = surveyor.survey(NULL_TOKEN)
    assert again is grown  # kept with its new stat, so unchanged since is the same record
    assert surveyor.reads == 3


def test_read_event_proves_its_target_without_failing_for_other_sessions(tmp_path: Path) -> None:
    """semantics.md §3.0.5 step 4 [ours]: a readEvent proves its target with the point lookup,
    which fails for the target's own defects as the listing does, but not for another
    session's; an id it does not find is looked for in the listing, with its errors. (Each
    request has its token, as on the wire: the inspect reuses the lookup its request made.)"""
    for index, session_id in enumerate(IDS[:3]):
        write_session(tmp_path, session_id, CWDS[index])
    age(tmp_path)
    binding = PersistenceBinding()
    binding.mount(JsonlBackend(str(tmp_path), compression="none", read_only=True))
    service = SessionQueryService(SessionStore(), binding)
    assert jsoncodec.loads(service.read_event("s0", 0, token=CancelToken()).target)["seq"] == 0

    def failure(session_id: str) -> tuple[str, str]:
        with pytest.raises(QueryError) as info:
            service.read_event(session_id, 0, token=CancelToken())
        return info.value.code, info.value.message

    flat = tmp_path / project_dir(CWDS[2]) / "loose.jsonl"
    flat.write_bytes(b"")
    flat_failure = (
        errors.PERSISTENCE_FAILED,
        f'session persistence listing failed: session artifact "{flat}" uses the unsupported'
        " flat-file layout; use a separate root or move it into a project/session directory"
        " before loading",
    )
    with pytest.raises(QueryError) as listing:
        service.list_sessions(CancelToken())
    assert (listing.value.code, listing.value.message) == flat_failure
    assert jsoncodec.loads(service.read_event("s0", 0, token=CancelToken()).target)["seq"] == 0
    assert failure("s9") == flat_failure  # not found here: the listing answers, and fails
    flat.unlink()
    other = session_dir(tmp_path, "s1", CWDS[1]) / "session.jsonl"
    other.write_bytes(
        transcript_header_line("s2", CWDS[2]) + event(0)
    )  # names another session's path
    assert jsoncodec.loads(service.read_event("s0", 0, token=CancelToken()).target)["seq"] == 0
    code, message = failure("s1")  # the target's own defect: as the listing reports it
    assert code == errors.PERSISTENCE_FAILED and f'corrupt session log "{other}"' in message
    assert failure("s9")[1] == message
    other.write_bytes(transcript_header_line("s1", CWDS[1]) + event(0))
    assert jsoncodec.loads(service.read_event("s1", 0, token=CancelToken()).target)["seq"] == 0
    assert failure("s9")[0] == errors.SESSION_NOT_FOUND
