"""Construct an importer backend for a parsed ``claude:``, ``codex:``, ``gemini:``,
``opencode:`` or ``copilot:`` URI."""

from __future__ import annotations

from ..contract.backend import PersistenceBackend
from ..importing.backend import ImportBackend


def open_importer(scheme: str, home: str, options: dict[str, str], uri: str) -> PersistenceBackend:
    if scheme == "opencode":
        from ..opencode.backend import OpenCodeBackend

        opencode = OpenCodeBackend(home, uri)
        opencode.check_home()  # a home that is no readable directory fails the mount
        return opencode
    if scheme == "claude":
        from ..claude.backend import ClaudeBackend

        backend: ImportBackend = ClaudeBackend(home, uri)
    elif scheme == "gemini":
        from ..gemini.backend import GeminiBackend

        backend = GeminiBackend(home, uri)
    elif scheme == "copilot":
        from ..copilot.backend import CopilotBackend

        backend = CopilotBackend(home, uri)
    elif scheme == "qwen":
        from ..qwen.backend import QwenBackend

        backend = QwenBackend(home, uri, include_archived=options.get("includeArchived") != "false")
    else:
        from ..codex.backend import CodexBackend

        backend = CodexBackend(
            home, uri, include_archived=options.get("includeArchived") != "false"
        )
    backend.check_home()  # a home that is no readable directory fails the mount
    return backend
