"""Construct an importer backend for a parsed ``claude:`` or ``codex:`` URI."""

from __future__ import annotations

from .backend import ImportBackend


def open_importer(scheme: str, home: str, options: dict[str, str], uri: str) -> ImportBackend:
    if scheme == "claude":
        from ..claude.backend import ClaudeBackend

        backend: ImportBackend = ClaudeBackend(home, uri)
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
