"""How a reading command gets its server: its ``--persistence`` input checked first (stores.py),
then the hub of its configuration or a private server (connect.py), then a store the server could
not mount reported with the server's reason instead of an empty corpus."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from ..client import Client
from . import style
from .connect import NotMounted, connect, persistence_option, uses_hub


def _require_mounted(client: Client, values: list[str] | None, hub: bool) -> None:
    """A server that could not mount its store at start runs without one (protocol.md); the
    command would then show nothing as if nothing were stored. A private server is asked to
    mount the same store again, so it says why (an RpcError, printed by ``fail``); a hub is
    never remounted for every client it serves: it says why it could not mount (hub/status)."""
    option = persistence_option(values)
    if option is None or client.request("sessionPersistence/status")["uri"] is not None:
        return
    if not hub:
        client.request("sessionPersistence/mount", {"uri": option})
        return
    failure = client.request("hub/status").get("mountFailure")
    if isinstance(failure, dict):
        code, message = str(failure.get("code")), str(failure.get("message"))
    else:  # mounted once, then unmounted by a client of the hub
        code, message = "SESSION_QUERY_PERSISTENCE_FAILED", "the hub has no store mounted"
    raise NotMounted(code, f"{message} (dsh-query hub stop, then try again; or --no-hub)")


@contextlib.contextmanager
def open_client(args: argparse.Namespace, **init: Any) -> Iterator[Client]:
    """The server of a reading command, once its ``--persistence`` input has been checked."""
    from .stores import refuse_wrong

    style.set_mode(getattr(args, "color", None))
    refuse_wrong(args.persistence)
    with connect(args, **init) as client:
        _require_mounted(client, args.persistence, uses_hub(args))
        yield client


__all__ = ["open_client"]
