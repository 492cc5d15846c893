"""How a reading command gets its server: its ``--persistence`` input checked first (stores.py),
then a server started (connect.py), then a store the server could not mount reported with the
server's reason instead of an empty corpus."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from ..client import StdioClient
from . import style
from .connect import connect, persistence_option


def _require_mounted(client: StdioClient, values: list[str] | None) -> None:
    """A server that could not mount its store at start runs without one (protocol.md); the
    command would then show nothing as if nothing were stored. Mounting the same store again
    makes the server say why (an RpcError, printed by ``fail``)."""
    option = persistence_option(values)
    if option is None or client.request("sessionPersistence/status")["uri"] is not None:
        return
    client.request("sessionPersistence/mount", {"uri": option})


@contextlib.contextmanager
def open_client(args: argparse.Namespace, **init: Any) -> Iterator[StdioClient]:
    """The server of a reading command, once its ``--persistence`` input has been checked."""
    from .stores import refuse_wrong

    style.set_mode(getattr(args, "color", None))
    refuse_wrong(args.persistence)
    with connect(args, **init) as client:
        _require_mounted(client, args.persistence)
        yield client


__all__ = ["open_client"]
