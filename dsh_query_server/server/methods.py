"""The one method table: every method the server's handlers register (server/registry.py,
server/handlers/), in name order, and the ``workspace/executeCommand`` ids that run some of them
(protocol.md §7). A hub's connections answer its own methods as well (hub/methods.py)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from . import handlers
from .registry import Method, registered


def _ours(m: Method) -> bool:
    """Registered by a module of server/handlers/ (importing them registers every method)."""
    return m.handler.__module__.startswith(handlers.__name__ + ".")


METHODS: Mapping[str, Method] = MappingProxyType(
    dict(sorted((name, m) for name, m in registered().items() if _ours(m)))
)

COMMANDS: Mapping[str, Method] = MappingProxyType(
    {m.command: m for m in METHODS.values() if m.command is not None}
)

__all__ = ["COMMANDS", "METHODS", "Method"]
