"""Export of imported sessions (issue 15 with issue 14): a Claude Code or Codex session, exported
with its sub-agents by `dsh-query export`, mounted back as a jsonl: root, reads event for event
identical to what the importer presents (tools.md §2: importers have no raw artifacts, so the
archive holds the logical log)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from dsh_query_server.model.event import Header
from dsh_query_server.persistence.jsonl import TRANSCRIPT, escape_segment, project_dir
from dsh_query_server.persistence.mount.uri import open_backend
from tests.import_helpers import REAL, SPEC, isolated_env

pytestmark = [pytest.mark.wire, pytest.mark.slow]

CODEX_ID = "019b64e5-57fa-7463-b644-fba7e456f905"


def events_of(uri: str, sid: str) -> list[object]:
    backend = open_backend(uri)
    try:
        return [e.to_value() for e in backend.inspect(sid).events]
    finally:
        backend.close()


def export(tmp: Path, uri: str, sid: str) -> Path:
    out = tmp / f"{escape_segment(sid)}.zip"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_query_server.cli",
            "export",
            sid,
            "--descendants",
            "-o",
            str(out),
            "--persistence",
            uri,
        ],
        env=isolated_env(tmp),
        cwd=str(tmp),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return out


def mount(archive: Path, root: Path) -> dict[str, str]:
    """Each entry placed where a jsonl: root keeps its session; {session id: entry name}."""
    placed: dict[str, str] = {}
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if not name.endswith("session.jsonl"):
                continue
            data = z.read(name)
            header = Header.from_json(data.split(b"\n", 1)[0])
            sid = str(header.id)
            cwd = header.cwd if isinstance(header.cwd, str) else None
            folder = root / project_dir(cwd) / escape_segment(sid)
            folder.mkdir(parents=True)
            (folder / TRANSCRIPT["none"]).write_bytes(data)
            placed[sid] = name
    return placed


def round_trip(tmp: Path, uri: str, sid: str) -> dict[str, str]:
    tmp.mkdir(parents=True, exist_ok=True)
    placed = mount(export(tmp, uri, sid), tmp / "back")
    back = f"jsonl:{tmp / 'back'}?readOnly=true"
    for exported in placed:
        assert events_of(back, exported) == events_of(uri, exported), exported
    return placed


def test_a_claude_session_with_its_sub_agent_round_trips(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    shutil.copytree(SPEC / "claude", home)
    placed = round_trip(tmp_path, f"claude:{home}", "claude-demo")
    assert placed["claude-demo"] == "session.jsonl"
    assert len(placed) > 1  # the sub-agent went along (subagents/<seg>/session.jsonl)


def test_real_claude_transcripts_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    for f in sorted((REAL / "claude-code").glob("*.jsonl")):
        target = home / "projects" / "-real" / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
    for f in sorted((REAL / "claude-code").glob("*.jsonl")):
        round_trip(tmp_path / f.stem, f"claude:{home}", f.stem)


def test_the_real_codex_rollout_round_trips(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    target = home / "sessions/2025/12/28" / f"rollout-2025-12-28T12-18-30-{CODEX_ID}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(REAL / "codex/simonw-sample_codex_session.jsonl", target)
    assert round_trip(tmp_path, f"codex:{home}", CODEX_ID) == {CODEX_ID: "session.jsonl"}
