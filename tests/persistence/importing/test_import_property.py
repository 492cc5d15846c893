"""Property tests (issue 14): for random native transcripts, well-formed and damaged, the imported
log replay-validates and folds, and its surface equals the one a brute-force replay of the native
format computes. The brute-force models below rebuild the whole message list after every record,
the way the agents themselves rebuild context, with none of the importer's spans or mirror."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings

from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from tests.import_helpers import checked, surface_texts
from tests.import_strategies import CODEX_SID, SID, claude_transcript, codex_rollout, line

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def claude_model(records: list[dict[str, Any]]) -> list[str | None]:
    """The final message list, rebuilt record by record (None: a record without a uuid)."""
    surface: list[str | None] = []
    last_of: dict[str, str | None] = {}
    parent_of: dict[str, Any] = {}
    seen: set[str] = set()
    for r in records:
        uuid = r.get("uuid")
        if uuid is not None and uuid in seen:
            continue
        produced: list[str | None] = []
        message = r.get("message", {})
        content = message.get("content")
        if r["type"] == "assistant":
            produced = [uuid]
            surface.append(uuid)
        elif (
            r["type"] == "user"
            and isinstance(content, list)
            and any(b.get("type") == "tool_result" for b in content)
        ):
            produced = [uuid] + [f"{uuid}#{k}" for k in range(1, len(content))]
            surface.extend(produced)
        elif r["type"] == "user" and r.get("isCompactSummary"):
            produced, surface = [uuid], [uuid]
        elif r["type"] == "user" and (r.get("isMeta") or isinstance(content, list)):
            produced = [uuid]
            surface.append(uuid)
        elif r["type"] == "user":
            cur, visited, anchor = r.get("parentUuid"), set(), None
            while cur in parent_of and cur not in visited:
                visited.add(cur)
                if cur in last_of and last_of[cur] in surface:
                    anchor = last_of[cur]
                    break
                cur = parent_of[cur]
            if anchor is not None:
                surface = surface[: surface.index(anchor) + 1]
            produced = [uuid]
            surface.append(uuid)
        if uuid is not None:
            seen.add(uuid)
            parent_of[uuid] = r.get("parentUuid")
            if produced:
                last_of[uuid] = produced[-1]
    return surface


@SETTINGS
@given(claude_transcript())
def test_claude_imports_replay_and_match_the_brute_force_surface(case):
    records, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        (home / "projects/-w").mkdir(parents=True)
        (home / f"projects/-w/{SID}.jsonl").write_bytes(body)
        backend = ClaudeBackend(str(home), "claude:x")
        listed = backend.list()
        if not listed:  # no record carries sessionId and timestamp: nothing to list
            assert not any("sessionId" in r and "timestamp" in r for r in records)
            return
        ins = backend.inspect(SID)
        checked(ins, SID)
        assert surface_texts(ins) == claude_model(records)
    finally:
        shutil.rmtree(home)


# -- Codex -------------------------------------------------------------------------------


def codex_model(records: list[dict[str, Any]], lines: dict[int, int]) -> list[str]:
    """Codex's own history rebuild: items appended, rollbacks drop user turns, compactions
    replace everything. 'P' stands for the empty placeholder where history was dropped."""
    history: list[tuple[str, str]] = []  # (id, kind)
    cut: int | None = None
    for index, r in enumerate(records):
        ln = lines[index]
        p = r["payload"]

        def take(kind: str) -> None:
            nonlocal history, cut
            if cut is not None:
                history = history[:cut] + ([("P", "placeholder")] if kind == "tool" else [])
                cut = None

        if r["type"] == "response_item":
            t = p["type"]
            if t == "message":
                if p["role"] == "user":
                    kind = (
                        "context" if p["content"][0]["text"].startswith("<environment") else "user"
                    )
                else:
                    kind = "role" if p["role"] == "developer" else "model"
                take(kind)
                history.append((f"L{ln}", kind))
            elif t == "function_call":
                take("model")
                history.append((f"L{ln}", "model"))
            elif t == "function_call_output":
                take("tool")
                history.append((f"L{ln}", "tool"))
        elif r["type"] == "event_msg" and p["type"] == "thread_rolled_back":
            base = history if cut is None else history[:cut]
            users = [i for i, (_, k) in enumerate(base) if k == "user"]
            n = p["num_turns"]
            if n and users:
                c = users[-n] if n <= len(users) else users[0]
                while c > users[0] and base[c - 1][1] in ("context", "role"):
                    c -= 1
                cut = c
        elif r["type"] == "compacted":
            cut = None
            if "replacement_history" in p:
                items = p["replacement_history"]
                roles = {"user": "user", "developer": "role", "assistant": "model"}
                history = [
                    (f"L{ln}" + (f"#{k}" if k else ""), roles[item["role"]])
                    for k, item in enumerate(items)
                ]
                history = history or [("P", "placeholder")]
            else:
                history = [(f"L{ln}", "summary")]
    if cut is not None:
        history = history[:cut] + [("P", "placeholder")]
    return [i for i, _ in history]


@SETTINGS
@given(codex_rollout())
def test_codex_imports_replay_and_match_the_brute_force_surface(case):
    records, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        folder = home / "sessions/2026/01/01"
        folder.mkdir(parents=True)
        (folder / f"rollout-2026-01-01T00-00-00-{CODEX_SID}.jsonl").write_bytes(body)
        backend = CodexBackend(str(home), "codex:x")
        [header] = backend.list()
        ins = backend.inspect(CODEX_SID)
        checked(ins, CODEX_SID)
        # line numbers of the records: damage() may insert lines before each one
        lines, n = {}, 0
        wanted = [line(r) for r in records]
        for number, raw in enumerate(body.split(b"\n"), 1):
            stripped = raw.strip(b"\0")
            if (
                n < len(wanted)
                and stripped.endswith(wanted[n])
                and (stripped == wanted[n] or stripped.startswith(b'{"type":"us'))
            ):
                lines[n] = number
                n += 1
        assert n == len(records)
        got = ["P" if i.startswith("placeholder-") else i for i in surface_texts(ins)]
        assert got == codex_model(records, lines)
    finally:
        shutil.rmtree(home)
