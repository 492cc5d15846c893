"""The importer mount table: the read-only backend of each foreign agent's scheme (importers.md
§1–§2, §7–§10). Each entry imports its package only when its scheme is mounted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..contract.backend import PersistenceBackend


class Importer(PersistenceBackend, Protocol):
    def check_home(self) -> bool:
        """False for an absent home; a home that is no readable directory fails (§3.1)."""
        ...


def _archived(options: dict[str, str]) -> bool:
    return options.get("includeArchived") != "false"


def _claude(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..claude.backend import ClaudeBackend

    return ClaudeBackend(home, uri)


def _codex(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..codex.backend import CodexBackend

    return CodexBackend(home, uri, include_archived=_archived(options))


def _gemini(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..gemini.backend import GeminiBackend

    return GeminiBackend(home, uri)


def _opencode(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..opencode.backend import OpenCodeBackend

    return OpenCodeBackend(home, uri)


def _copilot(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..copilot.backend import CopilotBackend

    return CopilotBackend(home, uri)


def _qwen(home: str, uri: str, options: dict[str, str]) -> Importer:
    from ..qwen.backend import QwenBackend

    return QwenBackend(home, uri, include_archived=_archived(options))


IMPORTERS: dict[str, Callable[[str, str, dict[str, str]], Importer]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "opencode": _opencode,
    "copilot": _copilot,
    "qwen": _qwen,
}


def open_importer(scheme: str, home: str, options: dict[str, str], uri: str) -> Importer:
    backend = IMPORTERS[scheme](home, uri, options)
    backend.check_home()  # a home that is no readable directory fails the mount
    return backend
