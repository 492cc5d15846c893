"""A read keeping only texts (issue 28: the index build's bulk read) gives every event of a random
transcript as an outline whose envelope and text are those of ``inspect``'s event, or, when the
importer meets a copy or a rewrite that needs an emitted payload, the whole log as ``inspect``
gives it (emitter.py ``WholeRead``)."""

from __future__ import annotations

import pathlib
import tempfile

from hypothesis import HealthCheck, given, settings

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.results import EventOutline, Inspection
from dsh_query_server.persistence.importing.backend import ImportBackend
from dsh_query_server.search.documents import PAYLOADS
from tests.import_helpers import jl
from tests.import_strategies import CODEX_SID, SID, claude_transcript, codex_rollout
from tests.persistence.claude.test_import_claude_rules import SID as RULE_SID
from tests.persistence.claude.test_import_claude_rules import asst, home_with, text, ts, user
from tests.persistence.importing.test_import_bulk import assert_same, inspected

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(backend: ImportBackend, sid: str) -> bool:
    """The texts read is ``inspect``'s log; True when it came as outlines."""
    got = backend._bulk_one(sid, NULL_TOKEN, PAYLOADS)  # pyright: ignore[reportPrivateUsage]
    assert_same(got, inspected(backend, sid), PAYLOADS)
    return isinstance(got, Inspection) and any(isinstance(e, EventOutline) for e in got.events)


@SETTINGS
@given(case=claude_transcript())
def test_claude_texts_are_inspects(case: tuple[object, bytes]) -> None:
    _, body = case
    with tempfile.TemporaryDirectory() as tmp:
        home = pathlib.Path(tmp)
        (home / "projects/-w").mkdir(parents=True)
        (home / f"projects/-w/{SID}.jsonl").write_bytes(body)
        _check(ClaudeBackend(str(home), "claude:x"), SID)


@SETTINGS
@given(case=codex_rollout())
def test_codex_texts_are_inspects(case: tuple[object, bytes]) -> None:
    _, body = case
    with tempfile.TemporaryDirectory() as tmp:
        home = pathlib.Path(tmp)
        folder = home / "sessions/2026/01/01"
        folder.mkdir(parents=True)
        (folder / f"rollout-2026-01-01T00-00-00-{CODEX_SID}.jsonl").write_bytes(body)
        _check(CodexBackend(str(home), "codex:x"), CODEX_SID)


def test_a_claude_copy_reads_the_log_whole(tmp_path: pathlib.Path) -> None:
    """A compaction that copies a preserved message reads the original's payload: the read
    keeping texts starts over whole, and answers as ``inspect``. A preserved suffix is no copy:
    that read stays outlines."""

    def transcript(preserved: list[str]) -> bytes:
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "sessionId": RULE_SID,
            "timestamp": ts(4),
            "compactMetadata": {"preservedMessages": {"uuids": preserved}},
        }
        return jl(
            user("u1", None, "one", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("u2", "a1", "two", 2),
            asst("a2", "u2", "m2", [text("B")], 3),
            boundary,
            user("s1", "b1", "Summary", 5, isCompactSummary=True),
        )

    assert not _check(home_with(tmp_path / "copied", transcript(["u1"])), RULE_SID)
    assert _check(home_with(tmp_path / "kept", transcript(["u2", "a2"])), RULE_SID)
