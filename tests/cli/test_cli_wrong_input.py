"""Issue 25, finding 2: wrong ``--persistence`` input says so (exit 2, the URI and the reason on
stderr, a "did you mean" line for a store one level off), and no command that only reads creates
a file or directory."""

from __future__ import annotations

import shutil

import pytest

from tests.builders import U, hdr, write_transcript
from tests.cli.cli_helpers import dsh, tree
from tests.import_helpers import SPEC

pytestmark = [pytest.mark.wire, pytest.mark.slow]


def refused(tmp_path, uri: str, *command: str) -> list[str]:
    """The stderr lines of a refused read of ``uri``; the command exits 2 and prints nothing."""
    result = dsh(*(command or ("sessions",)), "--persistence", uri, home=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    return result.stderr.splitlines()


def test_a_missing_store_is_refused_and_nothing_is_created(tmp_path):
    missing = tmp_path / "typo"
    assert refused(tmp_path, f"jsonl:{missing}") == [
        f"error: jsonl:{missing}: no such directory (a dsh session root is a directory)"
    ]
    store = missing / "sessions.db"
    assert refused(tmp_path, f"sqlite:{store}") == [
        f"error: sqlite:{store}: no such file (a command that only reads creates no store)"
    ]
    assert refused(tmp_path, f"claude:{missing}", "events", "x") == [
        f"error: claude:{missing}: no such directory (a Claude Code home is a directory)"
    ]
    export = dsh("export", "x", "--persistence", f"codex:{missing}", home=tmp_path)
    assert export.returncode == 2 and f"codex:{missing}: no such directory" in export.stderr
    assert not missing.exists()


def test_reading_the_default_store_creates_nothing(tmp_path):
    (tmp_path / "user-home").mkdir()  # the private HOME (import_helpers.isolated_env)
    before = tree(tmp_path)
    result = dsh("sessions", home=tmp_path)  # auto: the embedded store and the homes that exist
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "no sessions"
    # no state dir, no sessions.db, no -wal or -shm; the hub the command started keeps its search
    # index (and the index's lock) in the cache, as hub.md §1 says
    made = [p for p in tree(tmp_path) if p not in before]
    assert made and all(p == "cache" or p.startswith("cache/dsh-query") for p in made), made
    assert not [p for p in made if "sessions.db" in p]


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_a_file_that_is_not_the_store_its_scheme_names_is_refused(tmp_path, mode):
    notes = tmp_path / "notes.txt"
    notes.write_text("these are notes\n")
    notes.chmod(mode)
    assert refused(tmp_path, f"sqlite:{notes}") == [
        f"error: sqlite:{notes}: is not a SQLite database"
    ]
    assert refused(tmp_path, f"jsonl:{notes}") == [
        f"error: jsonl:{notes}: is a file, not a directory (a dsh session root is a directory)"
    ]
    mounted = dsh("mount", f"sqlite:{notes}", home=tmp_path)
    assert mounted.returncode == 2
    assert mounted.stderr == f"error: sqlite:{notes}: is not a SQLite database\n"
    assert refused(tmp_path, f"sqlite:{tmp_path}") == [
        f"error: sqlite:{tmp_path}: is a directory, not a SQLite database file"
    ]


def test_a_store_the_server_refuses_is_reported_with_its_reason(tmp_path):
    """A real database the server will not open (readable by others, persistence.md §5.3): the
    server's reason, not an empty listing."""
    from dsh_query_server.model.event import Header
    from dsh_query_server.persistence.sqlite import SqliteBackend

    store = tmp_path / "private" / "sessions.db"
    backend = SqliteBackend(str(store))
    backend.create(Header.from_value(hdr("s", 1)))
    backend.append("s", [U(0, "kept")])
    backend.close()
    store.chmod(0o644)
    reason = (
        "error SESSION_QUERY_PERSISTENCE_FAILED: failed to mount persistence: session database"
        f' "{store}" must be owned by the current user and accessible only by that user'
    )
    # through the hub, which could not mount it when it started (hub/status mountFailure)
    hint = " (dsh-query hub stop, then try again; or --no-hub)"
    assert refused(tmp_path, f"sqlite:{store}") == [reason + hint]
    assert refused(tmp_path, f"sqlite:{store}", "sessions", "--no-hub") == [reason]


def test_a_dsh_root_one_level_too_high_gets_a_did_you_mean(tmp_path):
    dsh_home = tmp_path / ".dsh"
    write_transcript(dsh_home / "sessions", hdr("s", 1, cwd="/w"), [U(0, "hello")])
    assert refused(tmp_path, f"jsonl:{dsh_home}") == [
        f"error: jsonl:{dsh_home}: holds no dsh sessions",
        f"  did you mean jsonl:{dsh_home / 'sessions'} ?",
    ]
    # The suggestion is right: it lists the session.
    listed = dsh("sessions", "--persistence", f"jsonl:{dsh_home / 'sessions'}", home=tmp_path)
    assert listed.returncode == 0 and listed.stdout.startswith("1 session (newest first)")
    # A project directory given for its root.
    project = next((dsh_home / "sessions").iterdir())
    assert refused(tmp_path, f"jsonl:{project}")[1] == (
        f"  did you mean jsonl:{dsh_home / 'sessions'} ?"
    )


def test_claude_and_codex_homes_one_level_off_get_a_did_you_mean(tmp_path):
    user = tmp_path / "user"
    claude = shutil.copytree(SPEC / "claude", user / ".claude")
    codex = shutil.copytree(SPEC / "codex", user / ".codex")
    for given, meant in (
        (f"claude:{claude / 'projects'}", f"claude:{claude}"),
        (f"claude:{claude / 'projects' / '-w'}", f"claude:{claude}"),
        (f"claude:{user}", f"claude:{claude}"),
        (f"codex:{codex / 'sessions'}", f"codex:{codex}"),
        (f"codex:{codex / 'sessions' / '2026' / '01'}", f"codex:{codex}"),
        (f"codex:{user}", f"codex:{codex}"),
    ):
        lines = refused(tmp_path, given)
        assert lines[0].startswith(f"error: {given}: is not a ") and "(it has no " in lines[0]
        assert lines[1] == f"  did you mean {meant} ?"


def test_an_empty_store_that_exists_lists_nothing(tmp_path):
    empty = tmp_path / "empty-root"
    empty.mkdir()
    result = dsh("sessions", "--persistence", f"jsonl:{empty}", home=tmp_path)
    assert result.returncode == 0 and result.stdout == "no sessions\n"
    blank = tmp_path / "blank.db"
    blank.touch(mode=0o600)
    result = dsh("sessions", "--persistence", f"sqlite:{blank}", home=tmp_path)
    assert result.returncode == 0 and result.stdout == "no sessions\n", result.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("blank")) == ["blank.db"]
