"""JSON-RPC 2.0 envelope checks: what a message is (request, notification, response) and which id
an answer goes to, before any method runs.

``shallow_members`` reads the top-level members of a body the JSON decoders refused although it
is valid JSON (nested deeper than their recursion limit, or a number too long for Python's
parser): a request like that still has a usable id, and its caller waits for an answer on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from .methods import METHODS, Method

# The namespaces of our methods: a request in one of them keeps its params as plain JSON, even
# for a method no handler registers (answered -32601 like any unknown method).
OWN_PREFIXES = tuple(sorted({name.split("/", 1)[0] + "/" for name in METHODS}))


def valid_id(msg_id: Any) -> bool:
    """A JSON-RPC id: a string, a number or null (absent counts as null)."""
    return (
        msg_id is None
        or isinstance(msg_id, str)
        or (isinstance(msg_id, (int, float)) and not isinstance(msg_id, bool))
    )


def request_id(msg_id: Any) -> bool:
    """An id that can name a request in flight: a string or a number (null names none)."""
    return msg_id is not None and valid_id(msg_id)


# One JSON token at a time; strings and numbers are matched whole by the regex engine, so a
# 10 MB string costs one match, not a Python loop over its characters.
_TOKEN = re.compile(
    r"""[ \t\n\r]*(?:
      (?P<string>"(?:[^"\\\x00-\x1f]+|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")
    | (?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<literal>true|false|null)
    | (?P<punct>[{}\[\]:,])
    )""",
    re.VERBOSE,
)
_VALUE, _KEY, _COLON, _COMMA, _CLOSE = 1, 2, 4, 8, 16  # what the scanner accepts next


class _Undecodable:
    def __repr__(self) -> str:
        return "UNDECODABLE"


UNDECODABLE = _Undecodable()  # a member's value the decoder refuses (too deep, number too long)


class _Invalid(Exception):
    pass


def shallow_members(body: bytes | bytearray) -> dict[str, Any] | None:
    """The top-level members of ``body`` when it is one valid JSON object, each value decoded on
    its own (``UNDECODABLE`` where the decoder refuses it); None when the body is not valid JSON
    or not an object. The scan is iterative: no depth limit."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        return _scan(text)
    except _Invalid:
        return None


def _scan(text: str) -> dict[str, Any] | None:
    members: dict[str, Any] = {}
    stack: list[str] = []  # "{" or "[" of each open container
    expect = _VALUE
    key: Any = None  # the current top-level member's name
    start = 0  # where its value starts, when that is a container
    top_is_object = False
    pos = 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            raise _Invalid
        pos = match.end()
        kind = match.lastgroup or ""
        token = match.group(kind)
        top = len(stack) == 1 and top_is_object
        if token in ("]", "}") and kind == "punct":
            if not expect & _CLOSE or not stack or stack.pop() != ("[" if token == "]" else "{"):
                raise _Invalid
            expect = _COMMA | _CLOSE
            if len(stack) == 1 and top_is_object:  # a top-level member's container ends
                members[key] = _decode(text[start:pos])
        elif expect & _VALUE:
            if kind != "punct":
                if top:
                    members[key] = _decode(token)
                expect = _COMMA | _CLOSE
            elif token in ("[", "{"):
                if not stack:
                    top_is_object = token == "{"
                elif top:
                    start = match.start(kind)
                stack.append(token)
                expect = (_KEY if token == "{" else _VALUE) | _CLOSE
            else:
                raise _Invalid
        elif expect & _KEY:
            if kind != "string":
                raise _Invalid
            if top:
                key = _decode(token)
            expect = _COLON
        elif expect & _COLON:
            if token != ":":
                raise _Invalid
            expect = _VALUE
        elif token == ",":  # expect is _COMMA | _CLOSE
            expect = _KEY if stack[-1] == "{" else _VALUE
        else:
            raise _Invalid
        if not stack:
            break
    if text[pos:].strip(" \t\n\r"):
        raise _Invalid
    return members if top_is_object else None


def _decode(text: str) -> Any:
    """msgspec, then json.loads (which takes lone surrogates), as the server decodes bodies."""
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError, MemoryError):
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError, MemoryError):
        return UNDECODABLE


def own_request(message: Any, methods: Mapping[str, Method]) -> tuple[Any, Method, Any] | None:
    """(id, method, params) of a well-formed request for a method of ``methods``, else None (the
    protocol's envelope checks and pygls deal with everything else)."""
    if type(message) is dict and message.get("jsonrpc") == "2.0" and "id" in message:
        name = message.get("method")
        method = methods.get(name) if isinstance(name, str) else None
        msg_id = message["id"]
        if method is not None and valid_id(msg_id):
            params = message.get("params")
            return msg_id, method, {} if params is None else params
    return None


def own_notification(message: Any, methods: Mapping[str, Method]) -> tuple[Method, Any] | None:
    """(method, params) of a well-formed notification for a method of ``methods``, else None."""
    if type(message) is dict and message.get("jsonrpc") == "2.0" and "id" not in message:
        name = message.get("method")
        method = methods.get(name) if type(name) is str else None
        if method is not None:
            return method, message.get("params")
    return None


def refused_message(body: bytes | bytearray) -> dict[str, Any] | None:
    """A body both decoders refused although it is valid JSON (too deep, a number too long):
    its top-level members, when its id and method can be read, so the request is answered on its
    id (its params may be UNDECODABLE); else None, and the body is a parse error."""
    members = shallow_members(body)
    if members is None or any(members.get(k) is UNDECODABLE for k in ("jsonrpc", "id", "method")):
        return None
    return members


__all__ = [
    "OWN_PREFIXES",
    "UNDECODABLE",
    "own_notification",
    "own_request",
    "refused_message",
    "request_id",
    "shallow_members",
    "valid_id",
]
