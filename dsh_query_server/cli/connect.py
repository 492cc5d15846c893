"""A server over stdio for one client command, and how a failed request is reported."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..client import RpcError, StdioClient


@contextlib.contextmanager
def connect(args: argparse.Namespace, env: dict[str, str] | None = None, **init: Any) -> Iterator[StdioClient]:
    """Commands that do not search open no index; search uses its own index file, because an
    index must never be shared with a running server."""
    from rich.console import Console

    if "index" not in init and "search" not in init:
        init["search"] = {"openAt": "never"}

    flags = []
    if args.persistence is not None:
        flags += ["--persistence", args.persistence]
    console = Console(stderr=True)
    with console.status("starting dsh-query server…", spinner="dots"):
        client = StdioClient(flags, initialization_options=init, env=env)
    try:
        yield client
    finally:
        client.close()


def fail(exc: Exception) -> None:
    """A coded error prints one line and exits 2; anything else is a bug and propagates."""
    if isinstance(exc, RpcError):
        sys.stderr.write(f"error {exc.data_code or exc.code}: {exc.message}\n")
        sys.exit(2)
    raise exc
