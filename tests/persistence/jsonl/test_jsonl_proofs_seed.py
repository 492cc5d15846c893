"""A jsonl: root surveyed and listed in a new process from what an earlier one kept in sync's state
file (its directory proofs and listed headers: JsonlBackend.export_proofs / export_listing,
sync/state.py, postgres.md §6) answers exactly as the full survey and a cold listing, whatever
changed since: appends, removals, rewrites, new sessions, new and removed directories."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.jsonl.survey import survey_root
from dsh_query_server.sync.state import SyncState, listed_source
from tests.persistence.jsonl.test_jsonl_proofs import (
    CWDS,
    IDS,
    MUTATIONS,
    age,
    full_survey_backend,
    mutate,
    outcome,
    requests,
    session_dir,
    write_session,
)

# Beyond test_jsonl_proofs' mutations: whole project directories removed, and directories that
# hold no transcript (a new project directory comes from "add" into a cwd not used yet).
EXTRA = ["rmproject", "emptydir"]


def mutate_more(root: Path, outside: Path, kind: str, data: st.DataObject) -> None:
    if kind == "rmproject":
        projects = sorted(p for p in root.iterdir() if p.is_dir())
        if projects:
            shutil.rmtree(data.draw(st.sampled_from(projects)))
    elif kind == "emptydir":
        cwd = data.draw(st.sampled_from(CWDS))
        session_dir(root, data.draw(st.sampled_from(IDS)), cwd).mkdir(parents=True, exist_ok=True)
    else:
        mutate(root, outside, kind, data)


def kept_and_seeded(root: Path) -> JsonlBackend:
    """A process that lists the root through sync's state (keeping it), then a new process's
    backend seeded from the saved state file."""
    earlier = JsonlBackend(str(root), compression="none", read_only=True)
    state = SyncState("postgres://target", f"jsonl:{root}")
    outcome(lambda: listed_source(earlier, state, CancelToken()))
    state.save()
    later = SyncState("postgres://target", f"jsonl:{root}")
    assert later.proofs == state.proofs and later.listing == state.listing  # the file round trip
    seeded = JsonlBackend(str(root), compression="none", read_only=True)
    seeded.seed_listing(later.listing)
    if later.proofs is not None:
        seeded.seed_proofs(later.proofs)
    return seeded


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.sampled_from(MUTATIONS + EXTRA), min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=8, max_size=8),
    st.data(),
)
def test_a_seeded_process_answers_as_the_full_survey(
    steps: list[str], aged: list[bool], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root, outside = Path(directory) / "root", Path(directory) / "outside"
        state_home = Path(directory) / "state"
        root.mkdir()
        outside.mkdir()
        for index, session_id in enumerate(IDS[:4]):
            write_session(root, session_id, CWDS[index % 2])
        age(root)
        previous = os.environ.get("XDG_STATE_HOME")
        os.environ["XDG_STATE_HOME"] = str(state_home)
        try:
            for step, old in zip(steps, aged, strict=False):
                seeded = kept_and_seeded(root)  # kept before the change
                mutate_more(root, outside, step, data)
                if old:
                    age(root)
                assert outcome(lambda b=seeded: b._surveyor.survey(NULL_TOKEN)) == outcome(
                    lambda: survey_root(str(root), NULL_TOKEN)
                )
                assert requests(seeded) == requests(full_survey_backend(root))
        finally:
            if previous is None:
                del os.environ["XDG_STATE_HOME"]
            else:
                os.environ["XDG_STATE_HOME"] = previous


def test_an_unchanged_root_is_listed_without_reading_a_directory_or_a_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "root"
    for index, session_id in enumerate(IDS):
        write_session(root, session_id, CWDS[index % 3])
    age(root)
    cold = [(s.header.raw, s.revision) for s in JsonlBackend(str(root)).list_snapshots()]
    seeded = kept_and_seeded(root)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read")

    monkeypatch.setattr("dsh_query_server.persistence.jsonl.proofs.scandir", refused)
    monkeypatch.setattr("dsh_query_server.persistence.jsonl.listing.read_raw_header", refused)
    assert [(s.header.raw, s.revision) for s in seeded.list_snapshots()] == cold
    assert seeded._surveyor.reads == 0


def test_a_damaged_kept_proof_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state file whose proof names a record another path's (so damaged) is not trusted."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = tmp_path / "root"
    write_session(root, "s0", CWDS[0])
    write_session(root, "s1", CWDS[0])
    age(root)
    backend = JsonlBackend(str(root), read_only=True)
    backend.list_snapshots()
    kept = backend.export_proofs()
    (a, proof_a), (b, proof_b) = kept.sessions.items()
    swapped = kept._replace(sessions={a: proof_a._replace(session=proof_b.session), b: proof_b})
    seeded = JsonlBackend(str(root), read_only=True)
    seeded.seed_proofs(swapped)
    assert seeded._surveyor.survey(NULL_TOKEN) == survey_root(str(root), NULL_TOKEN)
    assert seeded._surveyor.reads == 1  # only the damaged one
