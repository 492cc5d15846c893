"""The secret a TCP connection must present (hub.md §1, ``serve --tcp`` and ``hub --tcp``).

A loopback port is open to every local user, so a TCP connection's first message must be an
``initialize`` carrying ``initializationOptions.token``. Anything else before a successful
initialize, or a wrong token (compared in constant time), gets one error response (-32600,
``SESSION_QUERY_UNAUTHORIZED``) and the connection is closed; no method is answered on it.
Unix sockets need no token: the hub checks the peer's uid instead.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import sys
from collections.abc import Callable
from typing import Any

from .. import errors
from ..rundir import RunDirError, ensure, private_file, write_private
from .dispatch import encode_frame
from .envelope import request_id
from .protocol import QueryProtocol
from .rpcerrors import JSONRPC_INVALID_REQUEST

TOKEN_BYTES = 32  # 256 random bits
UNAUTHORIZED_MESSAGE = "a valid token is required on this TCP connection"
TOKEN_KEY = "token"


def read_token_file(path: str) -> str:
    """``--tcp-token-file``: a regular file of this user, mode 0600 or stricter, holding the
    token (surrounding whitespace ignored); RunDirError names what is wrong."""
    private_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"cannot read {path}: {exc}") from None
    if not token:
        raise RunDirError(f"refusing {path}: it holds no token")
    return token


def new_token_file(port: int) -> tuple[str, str]:
    """A fresh token in ``tcp-<port>.token`` (0600) of the hub directory: (token, path)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    path = os.path.join(ensure(), f"tcp-{port}.token")
    write_private(path, token.encode("ascii"))
    return token, path


def token_for(port: int, token_file: str | None) -> tuple[str, str, bool]:
    """(token, its file, whether we made the file) for a listener on ``port``; the path is
    said on stderr. A bad ``--tcp-token-file`` or directory exits 2 with its message."""
    try:
        if token_file is not None:
            return read_token_file(token_file), token_file, False
        token, path = new_token_file(port)
    except RunDirError as exc:
        sys.stderr.write(f"dsh-query: {exc}\n")
        sys.exit(2)
    sys.stderr.write(f"dsh-query: TCP token in {path}\n")
    return token, path, True


def unauthorized_frame(msg_id: Any) -> tuple[bytes | memoryview, ...]:
    error = {
        "code": JSONRPC_INVALID_REQUEST,
        "message": UNAUTHORIZED_MESSAGE,
        "data": {"code": errors.UNAUTHORIZED},
    }
    return encode_frame({"jsonrpc": "2.0", "id": msg_id, "error": error}, msg_id)


class TokenGate:
    """Stands before a TCP connection's protocol until an initialize with the right token has
    succeeded; ``admit`` says whether the protocol may take a frame body as usual."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    def admit(
        self, protocol: QueryProtocol, body: bytes | bytearray, close: Callable[[], None]
    ) -> bool:
        if protocol.host.runtime is not None:
            return True
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            message = None
        msg_id = message.get("id") if isinstance(message, dict) else None
        presented = _presented(message)
        if presented is not None and hmac.compare_digest(presented, self._token):
            protocol.handle_message(message)  # answered: initialized, or a config error
            return False
        protocol.write_frame(unauthorized_frame(msg_id if request_id(msg_id) else None))
        close()
        return False


def _presented(message: Any) -> bytes | None:
    """The token of an initialize request (taken out of its options), else None."""
    if not (
        isinstance(message, dict)
        and message.get("method") == "initialize"
        and request_id(message.get("id"))
    ):
        return None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    token = options.pop(TOKEN_KEY, None) if isinstance(options, dict) else None
    return token.encode("utf-8", "surrogatepass") if isinstance(token, str) else None


__all__ = ["TokenGate", "UNAUTHORIZED_MESSAGE", "token_for", "unauthorized_frame"]
