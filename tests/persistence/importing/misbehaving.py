"""Backends for the read worker's child that break its channel on purpose (test_import_bulk.py).
They run only in the worker process: the caller's own backend is the real one."""

from __future__ import annotations

import os
import sys

import msgspec

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.contract.results import Inspection
from dsh_query_server.persistence.importing.worker import MAGIC, Answer


def _out() -> int:
    return int(sys.argv[2])  # the worker's answer pipe (worker.py's command line)


class Dies(ClaudeBackend):
    """Exits on the second read."""

    reads = 0

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        Dies.reads += 1
        if Dies.reads == 2:
            os._exit(3)
        return super().inspect(session_id, token)


class BadMagic(ClaudeBackend):
    """Writes bytes that are not a frame before its first answer."""

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        os.write(_out(), b"XXXX\x00\x00\x00\x02hi")
        return super().inspect(session_id, token)


class WrongTypes(ClaudeBackend):
    """Writes a well-framed head whose fields have the wrong types (a desynced reader's
    "Expected `bytes`, got `int`")."""

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        head = msgspec.msgpack.encode(
            {
                "type": "Answer",
                "ident": 1,
                "session_id": session_id,
                "ok": True,
                "meta": 7,
                "ends": [],
            }
        )
        body = len(head).to_bytes(4, "big") + head
        os.write(_out(), MAGIC + len(body).to_bytes(4, "big") + body)
        return super().inspect(session_id, token)


class WrongRequest(ClaudeBackend):
    """Writes a well-formed answer to a request nobody made before its first answer."""

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        head = msgspec.msgpack.encode(Answer(999, session_id, False))
        body = len(head).to_bytes(4, "big") + head
        os.write(_out(), MAGIC + len(body).to_bytes(4, "big") + body)
        return super().inspect(session_id, token)
