"""Property test of the gemini: listing (importers.md §3.1, §7.1–§7.2): a backend that keeps proofs
between listings lists, and locates, exactly what a fresh backend does on a random Gemini CLI home
changing between calls (sessions added, appended, rewritten in place or replaced, removed; the
one-file format; copies under a hash directory; sub-agents; `.project_root` and `projects.json`
rewritten), with changes too young to prove anything or aged; the last unchanged listing reads
nothing (the harness is test_import_listing's)."""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
import tempfile
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.persistence.gemini.backend import GeminiBackend
from tests.persistence.importing.test_import_listing import SETTINGS, check, line

IDS = ["aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002", "bbbb"]
H = hashlib.sha256(b"/w").hexdigest()
PATHS = [
    "tmp/w/chats/session-2026-01-01T00-00-aaaaaaaa.jsonl",
    "tmp/w/chats/session-2026-01-01T00-01-aaaaaaaa.json",
    f"tmp/{H}/chats/session-2026-01-01T00-00-aaaaaaaa.jsonl",
    "tmp/v/chats/session-2026-01-01T00-00-bbbb.jsonl",
    f"tmp/w/chats/{IDS[0]}/bbbb.jsonl",
    "tmp/w/.project_root",
    "projects.json",
]


@st.composite
def session_body(draw: Any, document: bool) -> bytes:
    record = {
        "sessionId": draw(st.sampled_from(IDS)),
        "projectHash": draw(st.sampled_from([H, "0" * 64])),
        "startTime": f"2026-01-01T00:00:{draw(st.integers(0, 59)):02d}.000Z",
        "kind": draw(st.sampled_from(["main", "subagent"])),
    }
    if document:
        return draw(
            st.sampled_from([json.dumps({**record, "messages": []}, indent=2).encode(), b"{"])
        )
    out = b'{"$set":{"lastUpdated":"x"}}\n' if draw(st.booleans()) else b""
    out += line(record)
    if draw(st.booleans()):
        out = out[:-1]  # the session record is a final fragment
    return out


@st.composite
def gemini_op(draw: Any, rel: str | None = None) -> tuple[tuple[Any, ...], int]:
    kind = "write"
    if rel is None:
        kind = draw(st.sampled_from(["write", "write", "append", "replace", "remove"]))
    rel = rel if rel is not None else str(draw(st.sampled_from(PATHS)))
    if rel.endswith(".project_root"):
        payload = draw(st.sampled_from([b"/w\n", b"/elsewhere", b"relative"]))
    elif rel == "projects.json":
        table = draw(st.sampled_from([{"/w": "w"}, {"/v": "v", "/w": "x"}, {}]))
        payload = draw(st.sampled_from([json.dumps({"projects": table}).encode(), b"[]"]))
    elif kind == "append":
        payload = draw(st.sampled_from([b"\n", line({"$set": {"summary": "s"}}), b'{"id":']))
    else:
        payload = draw(session_body(rel.endswith(".json")))
    return (kind, rel, payload), draw(st.integers(0, 2))


def gemini_ops() -> st.SearchStrategy[list[tuple[tuple[Any, ...], int]]]:
    first = st.lists(st.sampled_from(PATHS), unique=True).flatmap(
        lambda rels: st.tuples(*(gemini_op(r) for r in rels))
    )
    return st.tuples(first, st.lists(gemini_op(), min_size=1, max_size=20)).map(
        lambda t: [*t[0], *t[1]]
    )


@SETTINGS
@given(gemini_ops())
def test_gemini_fast_listing_equals_a_fresh_listing(ops):
    root = pathlib.Path(tempfile.mkdtemp())
    try:
        check(root, lambda home: GeminiBackend(home, "gemini:x"), ops)
    finally:
        shutil.rmtree(root)
