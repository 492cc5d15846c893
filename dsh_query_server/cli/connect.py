"""The server a client command talks to, and how a failed request is reported.

By default a command talks to the hub of its configuration (hub.md §3), started when none runs;
``--no-hub`` (or a command that must not share state) starts a private server over stdio as
before. This module and what it imports on the hub path stay light: no msgspec, no server.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..client import Client, RpcError
from ..resolve import absolute_uri
from .progress_bar import attach, waiting


def persistence_option(values: list[str] | None) -> str | list[str] | None:
    """``--persistence`` given 0..n times as the ``persistence`` option (importers.md §4.3):
    absent is ``"auto"``, ``none`` is null, one URI is itself and several are an array."""
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
    flags: list[str] = []
    for value in values or []:
        flags += ["--persistence", value if value in ("auto", "none") else absolute_uri(value)]
    return flags


def hub_options(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration a command's hub is keyed by: its ``--persistence``, defaults else."""
    return {"persistence": persistence_option(args.persistence)}


def uses_hub(args: argparse.Namespace) -> bool:
    return not getattr(args, "no_hub", False)


@contextlib.contextmanager
def connect(
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
    *,
    private: bool = False,
    **init: Any,
) -> Iterator[Client]:
    """The hub of the command's configuration, or with ``--no-hub`` (or ``private``) a server of
    its own over stdio, with ``init`` as its initializationOptions. A private server's commands
    that do not search open no index."""
    if uses_hub(args) and not private:
        from ..hub.start import connect as connect_hub

        bar = waiting(sys.stderr, "reaching the hub")
        try:
            client = connect_hub(hub_options(args), wait=False)
        except BaseException:
            if bar is not None:
                bar.stop()
            raise
        assert client is not None
        attach(client, bar)
        try:
            yield client
        finally:
            client.close()
        return
    from ..client import StdioClient

    if "index" not in init and "search" not in init:
        init["search"] = {"openAt": "never"}
    flags = persistence_flags(args.persistence)
    bar = waiting(sys.stderr, "starting the server")
    try:
        private_client = StdioClient(flags, initialization_options=init, env=env)
    except BaseException:
        if bar is not None:
            bar.stop()
        raise
    attach(private_client, bar)
    try:
        yield private_client
    finally:
        private_client.close()


class NotMounted(Exception):
    """The hub of a command's configuration runs without its store: the mount's code and
    message (opening.py)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def fail(exc: Exception) -> None:
    """A coded error, or a hub that cannot be reached, prints one line and exits 2; anything
    else is a bug and propagates."""
    from ..hub.client import HubGone
    from ..hub.start import HubStartError
    from ..rundir import RunDirError
    from .ids import AmbiguousId

    if isinstance(exc, RpcError):
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    if isinstance(exc, NotMounted):
        sys.stderr.write(f"error {exc.code}: {exc.message}\n")
        sys.exit(2)
    if isinstance(exc, (AmbiguousId, HubStartError, RunDirError, HubGone)):
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    raise exc
