"""The one method table: every registered method by name (server/registry.py), in name order,
and the ``workspace/executeCommand`` ids that run some of them (protocol.md §7)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import handlers  # noqa: F401 - importing the handlers registers every method
from .registry import Method, registered

METHODS: Mapping[str, Method] = MappingProxyType(dict(sorted(registered().items())))

COMMANDS: Mapping[str, Method] = MappingProxyType(
    {m.command: m for m in METHODS.values() if m.command is not None}
)

__all__ = ["COMMANDS", "METHODS", "Method"]
