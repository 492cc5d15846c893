"""The gemini: importer (importers.md §7): the worked example of §7.6 as the document states it
(its files and its event table are read from docs/importers.md and compared with the fixture and
the import), then the layout, header, revision and mount rules of §7.1–§7.2."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil

import pytest

from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.errors import SessionPersistenceReadOnlyError
from dsh_query_server.persistence.gemini.backend import GeminiBackend
from dsh_query_server.persistence.mount.composite import auto_uris
from dsh_query_server.persistence.mount.uri import open_backend, parse_uri
from tests.import_helpers import (
    DOCS,
    FIXTURES,
    actual_table,
    checked,
    data,
    parse_table,
    surface_texts,
)

DOC = DOCS / "importers.md"
SPEC = FIXTURES / "gemini" / "spec"
S = "0b6e4f1c-5a7d-4d1e-9c8b-2f3a4b5c6d7e"
A = "9d0f3b2a-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
H = hashlib.sha256(b"/w").hexdigest()
CREATED = 1767225600000
MAIN = f"tmp/w/chats/session-2026-01-01T00-00-{S[:8]}.jsonl"
SUB = f"tmp/w/chats/{S}/{A}.jsonl"


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### 7.6 Worked example")
    end = text.find("\n## ", start)  # the next agent's section, if one follows
    return text[start : None if end < 0 else end]


def blocks(kind: str) -> list[str]:
    """The fenced blocks of §7.6 with this info string, placeholders replaced."""
    found: list[str] = []
    info: str | None = None  # the info string of the open fence
    body: list[str] = []
    for line in section().splitlines(keepends=True):
        if line.startswith("```"):
            if info is None:
                info, body = line[3:].strip(), []
            else:
                if info == kind:
                    found.append("".join(body))
                info = None
        elif info is not None:
            body.append(line)
    return [b.replace("⟨S⟩", S).replace("⟨A⟩", A).replace("⟨H⟩", H) for b in found]


@pytest.fixture
def demo(tmp_path: pathlib.Path) -> tuple[GeminiBackend, pathlib.Path]:
    home = tmp_path / ".gemini"
    shutil.copytree(SPEC / ".gemini", home)
    backend = open_backend(f"gemini:{home}")
    assert isinstance(backend, GeminiBackend)
    return backend, home


def test_the_documented_files_are_the_fixture():
    main, sub = blocks("jsonl")
    assert main == (SPEC / ".gemini" / MAIN).read_text(encoding="utf-8")
    assert sub == (SPEC / ".gemini" / SUB).read_text(encoding="utf-8")
    assert (SPEC / ".gemini/tmp/w/.project_root").read_text() == "/w"
    assert hashlib.sha256(b"/w").hexdigest() == H


def test_worked_example_event_by_event(demo):
    backend, home = demo
    ins = backend.inspect(S)
    checked(ins, S)
    table = blocks("")[-1]
    assert table.startswith("seq type")
    assert actual_table(ins) == parse_table(table, 1000, CREATED)
    assert surface_texts(ins) == ["env-ctx", "s1", "a1", "u4", "g4", "g4#1", "g5", "u6", "g6"]
    assert data(ins, 30) == {
        "turn": 3,
        "step": 1,
        "message": {
            "id": "g4#1",
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c2",
                    "content": [{"type": "text", "text": "Renamed b.py to c.py."}],
                }
            ],
            "source": {"kind": "tool", "callId": "c2"},
        },
        "meta": {"status": "success", "agentId": A},
        "import": {"line": 13},
    }
    assert data(ins, 8)["usage"] == json.loads((home / MAIN).read_text().splitlines()[4])["tokens"]
    assert data(ins, 8)["message"]["content"] == [
        {"type": "reasoning", "text": "**Listing** I will run ls."},
        {"type": "text", "text": "Let me look."},
    ]
    assert data(ins, 9)["message"]["content"] == [
        {
            "type": "tool-call",
            "id": "c1",
            "name": "run_shell_command",
            "arguments": '{"command":"ls"}',
        }
    ]
    assert data(ins, 37)["source"] == {
        "kind": "plugin",
        "plugin": "gemini-cli",
        "compactSummary": True,
    }
    assert data(ins, 2)["source"] == {"kind": "plugin", "plugin": "gemini-cli", "context": True}
    for seq in (38, 39, 40, 41, 42):  # replays: the last turn opened, step 0, no usage
        d = data(ins, seq)
        if "turn" in d:
            assert (d["turn"], d["step"]) == (3, 0) and "usage" not in d
    assert data(ins, 36)["record"] == json.loads((home / MAIN).read_text().splitlines()[16])
    title = [e for e in ins.events if e.type == "session/title"][-1]
    assert (title.seq, title.time, data(ins, title.seq)["title"]) == (
        50,
        1767225651000,
        "Rename b.py to c.py",
    )
    assert data(ins, 50)["source"] == {"kind": "provider", "provider": "google"}


def test_worked_example_headers(demo):
    backend, home = demo
    header_lines = blocks("")[0].replace("\n ", "").splitlines()
    documented = [json.loads(line.replace("/h/.gemini", str(home))) for line in header_lines]
    listed = {h.id: h.to_value() for h in backend.list()}
    assert listed == {h["id"]: h for h in documented}
    for sid, header in listed.items():
        assert backend.inspect(sid).meta.to_value() == header  # no approximation


def test_worked_example_subagent(demo):
    backend, _ = demo
    ins = backend.inspect(A)
    classes = checked(ins, A)
    assert [e.type for e in ins.events] == [
        "gemini/session",
        "turn/start",
        "user/message",
        "session/title",
        "step/start",
        "assistant/message",
        "gemini/set",
        "session/title",
        "step/end",
        "turn/end",
    ]
    assert [s for s, c in enumerate(classes) if c == "current"] == [2, 5]
    assert data(ins, 3)["title"] == "Rename b.py to c.py"
    assert data(ins, 7)["title"] == "Renamed b.py to c.py."


def test_revisions_follow_the_file_and_the_project_root(demo):
    backend, home = demo
    revs = {s.header.id: s.revision for s in backend.list_snapshots()}
    st = os.stat(home / MAIN)
    root = os.stat(home / "tmp/w/.project_root")
    assert revs[S] == (
        f"gemini:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
        f";root:{root.st_dev}:{root.st_ino}:{root.st_size}:{root.st_mtime_ns}"
    )
    with open(home / MAIN, "ab") as f:
        f.write(b'{"$set":{"lastUpdated":"2026-01-01T00:01:00.000Z"}}\n')
    again = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert again[S] != revs[S] and again[A] == revs[A]
    (home / "tmp/w/.project_root").write_text("/elsewhere")
    moved = {s.header.id: s for s in backend.list_snapshots()}
    assert moved[A].revision != revs[A] and moved[A].header.to_value()["cwd"] == "/elsewhere"


def _session(sid: str, stamp: str = "2026-01-01T00:00:00.000Z", **extra: object) -> bytes:
    meta = {"sessionId": sid, "projectHash": H, "startTime": stamp, "lastUpdated": stamp, **extra}
    prompt = {"id": "u1", "timestamp": stamp, "type": "user", "content": [{"text": "hi"}]}
    return (json.dumps(meta) + "\n" + json.dumps(prompt) + "\n").encode()


def _home(tmp_path: pathlib.Path, files: dict[str, bytes | str]) -> GeminiBackend:
    home = tmp_path / ".gemini"
    for rel, content in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    home.mkdir(exist_ok=True)
    return GeminiBackend(str(home), "gemini:test")


def test_the_jsonl_beats_the_json_it_was_migrated_from_and_copies_are_one_session(tmp_path):
    sid = "7e57a11d-0000-4000-8000-000000000001"
    doc = {
        "sessionId": sid,
        "projectHash": H,
        "startTime": "2026-01-01T00:00:00.000Z",
        "messages": [
            {"id": "u1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": "old"}
        ],
    }
    name = f"session-2026-01-01T00-00-{sid[:8]}"
    backend = _home(
        tmp_path,
        {
            f"tmp/{H}/chats/{name}.json": json.dumps(doc, indent=2),
            f"tmp/w/chats/{name}.json": json.dumps(doc, indent=2),
            f"tmp/w/chats/{name}.jsonl": _session(sid),
            "tmp/w/.project_root": "/w\n",
        },
    )
    [header] = backend.list()
    assert header.to_value()["source"]["path"].endswith(f"tmp/w/chats/{name}.jsonl")
    assert header.to_value()["cwd"] == "/w"


def test_cwd_from_the_marker_the_registry_or_nowhere(tmp_path):
    ids = [f"c0000000-0000-4000-8000-00000000000{k}" for k in range(4)]
    backend = _home(
        tmp_path,
        {
            # a slug owned through its marker
            "tmp/proj/.project_root": "/srv/proj\n",
            f"tmp/proj/chats/session-x-{ids[0][:8]}.jsonl": _session(ids[0]),
            # a hash directory the registry knows the root of
            f"tmp/{H}/chats/session-x-{ids[1][:8]}.jsonl": _session(ids[1]),
            # a slug without marker, named by the registry
            f"tmp/other/chats/session-x-{ids[2][:8]}.jsonl": _session(ids[2]),
            # a hash nobody knows
            f"tmp/{'e' * 64}/chats/session-x-{ids[3][:8]}.jsonl": _session(ids[3]).replace(
                H.encode(), b"f" * 64
            ),
            "projects.json": json.dumps({"projects": {"/w": "w", "/srv/other": "other"}}),
        },
    )
    cwd = {h.id: h.to_value().get("cwd") for h in backend.list()}
    assert cwd == {ids[0]: "/srv/proj", ids[1]: "/w", ids[2]: "/srv/other", ids[3]: None}
    assert backend.inspect(ids[3]).meta.to_value()["source"]["approximate"] == ["cwd-unknown"]
    assert "approximate" not in backend.inspect(ids[1]).meta.to_value()["source"]


def test_subagent_headers_and_kind(tmp_path):
    parent = "a0000000-0000-4000-8000-000000000000"
    child = "b0000000-0000-4000-8000-000000000000"
    backend = _home(
        tmp_path,
        {
            f"tmp/w/chats/session-x-{parent[:8]}.jsonl": _session(parent, kind="main"),
            f"tmp/w/chats/{parent}/{child}.jsonl": _session(child, kind="subagent"),
            "tmp/w/chats/session-y-old00000.json": json.dumps(
                {
                    "sessionId": "old",
                    "projectHash": H,
                    "startTime": "2026-01-01T00:00:00Z",
                    "messages": [],
                    "kind": "subagent",
                },
                indent=2,
            ),
        },
    )
    headers = {h.id: h.to_value() for h in backend.list()}
    assert headers[child]["parentSession"] == parent
    assert (headers[child]["origin"], headers[child]["delegationDepth"]) == ("subagent", 1)
    assert headers[child]["source"]["lineage"] == "subagent"
    assert "parentSession" not in headers["old"] and headers["old"]["origin"] == "subagent"
    assert "origin" not in headers[parent]


def test_files_without_a_session_record_are_not_listed_but_are_named_unreadable(tmp_path):
    sid = "d0000000-0000-4000-8000-000000000000"
    backend = _home(
        tmp_path,
        {
            f"tmp/w/chats/session-x-{sid[:8]}.jsonl": b'{"$set":{"lastUpdated":"x"}}\n',
            f"tmp/w/chats/{sid}/e0000000.jsonl": b"garbage\n",
            "tmp/w/chats/session-y-broken00.json": b"{not json",
            "tmp/w/chats/session-y-deep0000.json": b"[" * 200_000 + b"]" * 200_000,
            "projects.json": b'{"projects":' + b"[" * 200_000 + b"]" * 200_000 + b"}",
            "tmp/w/chats/logs.json": b"[]",
            "tmp/w/chats/session-z-tmp00000.jsonl.tmp-123": _session("tmp"),
        },
    )
    assert backend.list() == []
    with pytest.raises(Exception, match="unreadable"):
        backend.inspect(sid)
    with pytest.raises(Exception, match="not found"):
        backend.inspect("nothing-like-it")


def test_writes_are_refused_and_uri_options(demo, tmp_path):
    backend, _ = demo
    assert backend.writable is False
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.create(Header.from_value({"version": 0, "id": "x", "createdAt": 0}))
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append(S, [])
    with pytest.raises(QueryError) as info:
        parse_uri(f"gemini:{tmp_path}?readOnly=false")
    assert info.value.code == "SESSION_QUERY_INVALID_CONFIG"
    with pytest.raises(QueryError):
        parse_uri(f"gemini:{tmp_path}?includeArchived=true")


def test_home_defaults_follow_gemini_cli(monkeypatch, tmp_path):
    """Gemini CLI reads $GEMINI_CLI_HOME as the user's home: its own home is .gemini in it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    assert parse_uri("gemini:").location == f"{tmp_path}/.gemini"
    assert parse_uri("gemini:~/x").location == f"{tmp_path}/x"
    monkeypatch.setenv("GEMINI_CLI_HOME", "/isolated")
    assert parse_uri("gemini:").location == "/isolated/.gemini"
    monkeypatch.setenv("GEMINI_CLI_HOME", "")
    assert parse_uri("gemini:").location == f"{tmp_path}/.gemini"


def test_auto_mounts_the_gemini_home_that_exists(tmp_path):
    user = tmp_path / "user"
    env = {"HOME": str(user)}
    assert not any(u.startswith("gemini:") for u in auto_uris("sqlite:/s.db", env))
    (user / ".gemini" / "tmp").mkdir(parents=True)
    assert auto_uris("sqlite:/s.db", env)[-1] == f"gemini:{user}/.gemini"
    other = tmp_path / "isolated"
    (other / ".gemini" / "tmp").mkdir(parents=True)
    env["GEMINI_CLI_HOME"] = str(other)
    assert auto_uris("sqlite:/s.db", env)[-1] == f"gemini:{other}/.gemini"


def test_absent_home_lists_nothing_and_a_file_home_fails(tmp_path):
    assert open_backend(f"gemini:{tmp_path}/missing").list() == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(QueryError) as info:
        open_backend(f"gemini:{tmp_path}/file")
    assert info.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"


def _snapshot(root: pathlib.Path) -> dict[str, tuple[bytes, int, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path)] = (path.read_bytes() if path.is_file() else b"", st.st_mtime_ns, st.st_mode)
    return out


def test_reading_never_writes_to_the_home(demo):
    backend, home = demo
    os.utime(home, (1, 1))  # an old directory time: a write would move it
    before = _snapshot(home)
    dir_times = {p: os.stat(p).st_mtime_ns for p in [home, *home.rglob("*")] if p.is_dir()}
    for sid in (S, A):
        backend.inspect(sid)
        backend.inspect_window(sid, 0, 5)
        backend.inspect_window(sid, 2, 3)
    backend.list_snapshots()
    assert _snapshot(home) == before
    assert {p: os.stat(p).st_mtime_ns for p in dir_times} == dir_times
