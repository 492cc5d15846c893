"""Where Qwen Code keeps its chats under a home (importers.md §10.1) and what each file's path
says: the session id, whether it is archived, and for a sub-agent its session and agent ids."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..importing.survey import Survey, is_dir

# Qwen Code lists only files named like this (sessionService.ts SESSION_FILE_PATTERN)
_SESSION_FILE = re.compile(r"[0-9a-fA-F-]{32,36}\.jsonl")


@dataclass(frozen=True, slots=True)
class QwenFile:
    """One transcript: a session's chat (``agent`` None) or a background sub-agent's."""

    path: str
    stem: str  # the session id (for a sub-agent, its session's directory name)
    agent: str | None = None
    archived: bool = False

    @property
    def session_id(self) -> str:
        return self.stem if self.agent is None else f"{self.stem}/agent-{self.agent}"

    @property
    def rank(self) -> int:
        """The same id twice: an active chat beats an archived one."""
        return 1 if self.archived else 0


def _agent_of(name: str) -> str | None:
    if name.startswith("agent-") and name.endswith(".jsonl") and len(name) > 12:
        return name[6:-6]
    return None


def chat_files(sv: Survey, home: str, include_archived: bool) -> list[QwenFile]:
    """Every transcript under ``<home>/projects/<slug>/``: ``chats/<id>.jsonl``,
    ``chats/archive/<id>.jsonl`` and ``subagents/<id>/agent-<a>.jsonl``."""
    out: list[QwenFile] = []
    for project in sv.entries(os.path.join(home, "projects")):
        if not is_dir(project):
            continue
        chats = os.path.join(project.path, "chats")
        folders = [(chats, False)]
        if include_archived:
            folders.append((os.path.join(chats, "archive"), True))
        for folder, archived in folders:
            for entry in sv.entries(folder):
                if _SESSION_FILE.fullmatch(entry.name) and not is_dir(entry):
                    out.append(QwenFile(entry.path, entry.name[:-6], archived=archived))
        for session in sv.entries(os.path.join(project.path, "subagents")):
            if not is_dir(session):
                continue
            for entry in sv.entries(session.path):
                agent = _agent_of(entry.name)
                if agent is not None:
                    out.append(QwenFile(entry.path, session.name, agent))
    return out


def sidecar_path(f: QwenFile, agent: str) -> str:
    """``agent-<a>.meta.json`` beside a sub-agent transcript of the same session."""
    return os.path.join(os.path.dirname(f.path), f"agent-{agent}.meta.json")
