"""A server over stdio for one client command, and how a failed request is reported."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..client import RpcError, StdioClient


def persistence_option(values: list[str] | None) -> str | list[str] | None:
    """``--persistence`` given 0..n times as the ``persistence`` option (importers.md §4.3):
    absent is ``"auto"``, ``none`` is null, one URI is itself and several are an array."""
    from ..persistence.mount.uri import absolute_uri

    if not values:
        return "auto"
    if values == ["none"]:
        return None
    if len(values) == 1:
        return values[0] if values[0] == "auto" else absolute_uri(values[0])
    return [
        v if v in ("auto", "none") else absolute_uri(v) for v in values
    ]  # the server refuses those


def persistence_flags(values: list[str] | None) -> list[str]:
    """The server's flags for the same ``--persistence`` values (repeated as given)."""
    from ..persistence.mount.uri import absolute_uri

    flags: list[str] = []
    for value in values or []:
        flags += ["--persistence", value if value in ("auto", "none") else absolute_uri(value)]
    return flags


@contextlib.contextmanager
def connect(
    args: argparse.Namespace, env: dict[str, str] | None = None, **init: Any
) -> Iterator[StdioClient]:
    """Commands that do not search open no index; search uses its own index file, because an
    index must never be shared with a running server."""
    from rich.console import Console

    if "index" not in init and "search" not in init:
        init["search"] = {"openAt": "never"}

    flags = persistence_flags(args.persistence)
    console = Console(stderr=True)
    with console.status("starting dsh-query server…", spinner="dots"):
        client = StdioClient(flags, initialization_options=init, env=env)
    try:
        yield client
    finally:
        client.close()


def fail(exc: Exception) -> None:
    """A coded error prints one line and exits 2; anything else is a bug and propagates."""
    from .ids import AmbiguousId

    if isinstance(exc, RpcError):
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    if isinstance(exc, AmbiguousId):
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    raise exc
