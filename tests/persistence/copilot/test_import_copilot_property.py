"""Property test (issue 26) for the copilot: importer: random Copilot CLI logs, well-formed and
damaged, import into logs that replay-validate and fold, for the main agent and every sub-agent,
and each surface equals the one a brute-force replay of Copilot's own context rule computes. The
model below rebuilds the message list after every record, with none of the importer's spans,
mirror or markers."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings

from dsh_query_server.persistence.copilot.backend import CopilotBackend
from tests.import_helpers import checked, surface_texts
from tests.persistence.copilot.copilot_strategies import SID, copilot_log, owner

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid(kind: str, d: dict[str, Any]) -> bool:
    """Whether a mapped record carries the fields its mapping needs."""
    if kind == "user.message":
        return isinstance(d.get("content"), str)
    if kind == "system.message":
        return isinstance(d.get("content"), str) and isinstance(d.get("role"), str)
    if kind == "assistant.message":
        return isinstance(d.get("content"), str)
    if kind == "tool.execution_complete":
        return isinstance(d.get("toolCallId"), str) and d["toolCallId"] != ""
    return True


def copilot_model(records: list[dict[str, Any]], agent: str | None) -> list[str]:
    """Copilot's request after each record, for one agent's records: messages append; a
    compaction puts its summary (P without one) where the messages present at its start were,
    after the leading system prompt, keeping what came while it ran; /clear keeps only the
    leading system prompt and its initial message (P without one)."""
    surface: list[tuple[str, str]] = []  # (id, kind)
    snap: int | None = None  # surface length when the compaction under way started

    def lead() -> int:
        n = 0
        while n < len(surface) and surface[n][1] == "system":
            n += 1
        return n

    for r in records:
        if owner(r) != agent or r["type"] == "session.start":
            continue
        kind, d, rid = r["type"], r["data"], r["id"]
        if not _valid(kind, d):
            continue
        if kind in ("user.message", "assistant.message", "tool.execution_complete"):
            surface.append((rid, kind))
        elif kind == "system.message":
            surface.append((rid, "system" if d["role"] == "system" else "developer"))
        elif kind == "session.compaction_start":
            snap = len(surface)
        elif kind == "session.compaction_complete":
            cut = len(surface) if snap is None else snap
            snap = None
            summary = d.get("summaryContent")
            if d.get("success") is False or (d.get("success") is not True and summary is None):
                continue
            keep = lead()
            new = (rid, "summary") if summary is not None else ("P", "placeholder")
            if cut > keep:
                surface = surface[:keep] + [new] + surface[cut:]
            elif summary is not None:
                surface.append(new)
        elif kind == "session.context_cleared":
            snap = None
            keep = lead()
            if "initialMessage" in d:
                surface = surface[:keep] + [(rid, "cleared")]
            elif len(surface) > keep:
                surface = surface[:keep] + [("P", "placeholder")]
    return [i for i, _ in surface]


@SETTINGS
@given(copilot_log())
def test_copilot_imports_replay_and_match_the_brute_force_surface(case):
    records, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        folder = home / "session-state" / SID
        folder.mkdir(parents=True)
        (folder / "events.jsonl").write_bytes(body)
        backend = CopilotBackend(str(home), "copilot:x")
        listed = {h.id: h for h in backend.list()}
        agents = {owner(r) for r in records[1:]} - {None}
        assert set(listed) == {SID} | {f"{SID}/agent-{a}" for a in agents}
        for sid in listed:
            ins = backend.inspect(sid)
            checked(ins, sid)
            assert listed[sid].to_value()["createdAt"] == ins.meta.to_value()["createdAt"]
            agent = None if sid == SID else sid.split("/agent-", 1)[1]
            got = ["P" if i.startswith("placeholder-") else i for i in surface_texts(ins)]
            assert got == copilot_model(records, agent)
    finally:
        shutil.rmtree(home)
