"""What a hub's connection answers (hub.md §2): the server's method table (server/methods.py)
and the hub's own methods (handlers.py), in name order."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..server.methods import METHODS as SERVER_METHODS
from ..server.registry import Method, registered
from . import handlers

OWN: tuple[str, ...] = tuple(
    name for name, m in registered().items() if m.handler.__module__ == handlers.__name__
)

METHODS: Mapping[str, Method] = MappingProxyType(
    dict(sorted({**SERVER_METHODS, **{name: registered()[name] for name in OWN}}.items()))
)

__all__ = ["METHODS", "OWN"]
