"""JSON-RPC error numbers and the mapping from coded failures (errors.py) to them
(protocol.md §2): validation codes are -32602, cancellation -32800, a bug -32603, a TCP
connection without its token -32600, every other coded failure -32803."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException

from .. import errors
from ..errors import QueryError

SERVER_NOT_INITIALIZED = -32002
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
REQUEST_CANCELLED = -32800
INTERNAL_ERROR = -32603
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_METHOD_NOT_FOUND = -32601

# The answer to a bug: never a traceback or a server path.
INTERNAL = {"code": INTERNAL_ERROR, "message": "internal error", "data": {"code": errors.INTERNAL}}


def rpc_number(exc: QueryError) -> int:
    if exc.code == errors.UNAUTHORIZED:
        return JSONRPC_INVALID_REQUEST
    if exc.code == errors.ABORTED:
        return REQUEST_CANCELLED
    if exc.code == errors.INTERNAL:
        return INTERNAL_ERROR
    if exc.code in errors.VALIDATION_CODES:
        return INVALID_PARAMS
    return REQUEST_FAILED


def to_rpc_error(exc: QueryError) -> JsonRpcException:
    return JsonRpcException(message=exc.message, code=rpc_number(exc), data=exc.data())


def error_object(exc: QueryError) -> dict[str, Any]:
    """The ``error`` member of the answer to a coded failure."""
    error: dict[str, Any] = {"code": rpc_number(exc), "message": exc.message}
    data = exc.data()
    if data is not None:
        error["data"] = data
    return error
