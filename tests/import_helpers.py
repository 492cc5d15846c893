"""Shared by the importer tests: homes built from files, replay checks, the spec's tables."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from typing import Any

from dsh_query_server.persistence.contract.results import Inspection
from dsh_query_server.session.fold import fold_surface
from dsh_query_server.session.validate import replay_error
from tests.conftest import AGENT_HOMES

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
SPEC = FIXTURES / "spec"
REAL = FIXTURES / "real"
DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def jl(*records: Any) -> bytes:
    """Records as JSONL lines (strings pass through as raw lines)."""
    out = []
    for r in records:
        out.append(
            r.encode() if isinstance(r, str) else json.dumps(r, separators=(",", ":")).encode()
        )
    return b"\n".join(out) + b"\n"


def write_home(root: pathlib.Path, files: dict[str, bytes | str]) -> pathlib.Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def copy_spec(name: str, dest: pathlib.Path) -> pathlib.Path:
    shutil.copytree(SPEC / name, dest)
    return dest


def checked(ins: Inspection, sid: str) -> list[str]:
    """Replay-validate and fold an imported log; the class of every seq."""
    assert replay_error(ins.meta.to_value(), ins.events, sid) is None, replay_error(
        ins.meta.to_value(), ins.events, sid
    )
    return fold_surface(ins.events).classes()


def data(ins: Inspection, seq: int) -> dict[str, Any]:
    return ins.events[seq].data()


def surface_texts(ins: Inspection) -> list[str]:
    """The current surface as text (the ids and texts a model would be sent)."""
    fold = fold_surface(ins.events)
    out = []
    for seq in fold.nodes:
        d = ins.events[seq].data()
        message = d if ins.events[seq].type == "user/message" else d["message"]
        out.append(message["id"])
    return out


def parse_table(text: str, unit_ms: int, created: int) -> list[tuple[Any, ...]]:
    """Rows of a worked example's event table: (seq, type, line, time, op, src, class)."""
    rows = []
    for row in text.strip().splitlines()[1:]:
        tokens = row.split()
        line = None if tokens[-5] == "-" else int(tokens[-5])
        op: Any = tokens[-3]
        if op.startswith("R("):
            start, end = op[2:-1].split("..")
            op = {"op": "replace", "start": int(start), "end": int(end)}
        elif op == "-":
            op = None
        src = None if tokens[-2] == "-" else json.loads(tokens[-2])
        rows.append(
            (
                int(tokens[0]),
                tokens[1],
                line,
                created + int(tokens[-4]) * unit_ms,
                op,
                src,
                tokens[-1],
            )
        )
    return rows


def actual_table(ins: Inspection) -> list[tuple[Any, ...]]:
    classes = fold_surface(ins.events).classes()
    rows = []
    for e in ins.events:
        value = e.to_value()
        line = value["data"]["import"].get("line")
        if value["data"]["import"].get("file"):
            line = None
        rows.append(
            (
                e.seq,
                e.type,
                line,
                e.time,
                value.get("surfaceOp"),
                value.get("sourceEventSeqs"),
                classes[e.seq],
            )
        )
    return rows


def isolated_env(tmp: pathlib.Path) -> dict[str, str]:
    """A server environment whose every home lies inside ``tmp`` (tests never read a real one):
    HOME, the state directory and each agent's variable (conftest.AGENT_HOMES) under it."""
    home = tmp / "user-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(home / ".state"))
    env.update({variable: str(home / default) for variable, default in AGENT_HOMES.items()})
    return env


COMPACT_AGENT = "acompact-5e1f0a"


def claude_home_with_a_compaction_helper(tmp_path: pathlib.Path) -> pathlib.Path:
    """The importers.md §1.5 home plus a compaction helper transcript for claude-demo, laid out
    as Claude Code lays them (``<session>/subagents/agent-acompact-<hex>.jsonl``, sidechain
    records with the helper's ``agentId``; written here by hand)."""
    home = shutil.copytree(SPEC / "claude", tmp_path / "claude")
    folder = home / "projects" / "-w" / "claude-demo" / "subagents"
    common = f'"sessionId":"claude-demo","agentId":"{COMPACT_AGENT}","isSidechain":true'
    (folder / f"agent-{COMPACT_AGENT}.jsonl").write_text(
        f'{{"type":"user","uuid":"k1","parentUuid":null,{common},'
        '"timestamp":"2026-01-01T00:00:39.000Z","cwd":"/w","version":"2.1.38",'
        '"message":{"role":"user","content":"Summarise the conversation so far."}}\n'
        f'{{"type":"assistant","uuid":"k2","parentUuid":"k1",{common},'
        '"timestamp":"2026-01-01T00:00:40.000Z","message":{"id":"mk","role":"assistant",'
        '"model":"claude-x","content":[{"type":"text","text":"Summary: listed files."}]}}\n'
    )
    return home
