"""The one dispatch path for the method table (methods.py): a method runs with the request's own
cancellation token, in a worker thread or (``Method.inline``) on the thread that read it, and its
result or coded failure is encoded into a frame with msgspec. Requests over the wire, LSP
``workspace/executeCommand`` and notifications for our methods all go through ``Dispatcher``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import msgspec
from msgspec import Raw

from .. import errors, jsoncodec
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..errors import QueryError
from ..progress import NULL_TRACKER, Tracker
from .envelope import UNDECODABLE, request_id
from .registry import Method
from .rpcerrors import INTERNAL, error_object, to_rpc_error
from .transport import JOIN_BELOW, frame_parts, header

log = logging.getLogger("dsh_query_server")

# The parts of one frame, written in order under the protocol's write lock.
Frame = tuple[bytes | memoryview, ...]
UNDECODABLE_MESSAGE = "params nest deeper than the decoder allows, or hold a number it cannot read"


class Tokens:
    """Cancellation tokens of requests in flight, by JSON-RPC id, and by the work-done progress
    token that shows them (``window/workDoneProgress/cancel`` names that one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[Any, CancelToken] = {}
        self._by_progress: dict[Any, CancelToken] = {}
        self._progress_of: dict[Any, Any] = {}
        self._watched: dict[Any, Callable[[], None]] = {}  # tokens of work that is no request

    def register(
        self, msg_id: Any, progress: Tracker = NULL_TRACKER, progress_token: Any = None
    ) -> CancelToken:
        token = CancelToken(progress)
        with self._lock:
            self._tokens[msg_id] = token
            if progress_token is not None:
                self._by_progress[progress_token] = token
                self._progress_of[msg_id] = progress_token
        return token

    def release(self, msg_id: Any) -> None:
        with self._lock:
            self._tokens.pop(msg_id, None)
            progress_token = self._progress_of.pop(msg_id, None)
            if progress_token is not None:
                self._by_progress.pop(progress_token, None)

    def watch(self, progress_token: Any, cancel: Callable[[], None]) -> None:
        """``progress_token`` shows work that is no request (the index warm-up): its
        ``window/workDoneProgress/cancel`` calls ``cancel``."""
        with self._lock:
            self._watched[progress_token] = cancel

    def unwatch(self, progress_token: Any) -> None:
        """The work ``progress_token`` showed has ended: its token names nothing any more."""
        with self._lock:
            self._watched.pop(progress_token, None)

    def cancel_progress(self, progress_token: Any) -> bool:
        """``window/workDoneProgress/cancel``: fire the request (or stop the work) shown by
        ``progress_token``."""
        with self._lock:
            token = self._by_progress.get(progress_token)
            watched = self._watched.get(progress_token)
        if watched is not None:
            watched()
            return True
        if token is None:
            return False
        token.cancel()
        return True

    def cancel_all(self) -> None:
        with self._lock:
            tokens = list(self._tokens.values())
        for token in tokens:
            token.cancel()

    def cancel(self, msg_id: Any) -> bool:
        """Fire the token of ``msg_id``; False when no request in flight has that id. An id
        that cannot name a request (null, an array, an object) names none."""
        if not request_id(msg_id):
            return False
        with self._lock:
            token = self._tokens.get(msg_id)
        if token is None:
            return False
        token.cancel()
        return True


def invoke(method: Method, runtime: Runtime, params: Any, token: CancelToken) -> Any:
    """Run one method: params checked for being an object, bugs logged and answered INTERNAL.
    Its progress (token.progress) starts its delay now and ends before the answer is sent,
    whatever the outcome."""
    progress = token.progress
    progress.arm()
    outcome: QueryError | None = None
    try:
        return _invoke(method, runtime, params, token)
    except QueryError as exc:
        outcome = exc
        raise
    finally:
        progress.finish(outcome_message(outcome))


def outcome_message(exc: QueryError | None) -> str:
    """The progress' end message of a request that ended with ``exc`` (None: success)."""
    if exc is None:
        return "done"
    return "cancelled" if exc.code == errors.ABORTED else f"failed: {exc.message}"


def _invoke(method: Method, runtime: Runtime, params: Any, token: CancelToken) -> Any:
    try:
        if params is None:
            params = {}
        if params is UNDECODABLE:
            raise QueryError(errors.INVALID_REQUEST, UNDECODABLE_MESSAGE)
        if not isinstance(params, dict):
            raise QueryError(errors.INVALID_REQUEST, "params must be an object")
        return method.run(runtime, params, token)
    except QueryError:
        raise
    except BaseException:  # a bug: log it with its traceback, answer INTERNAL
        # BaseException too: a backend raising SystemExit or another non-Exception in this worker
        # thread would otherwise escape and leave the request unanswered.
        log.exception("unexpected failure")
        raise QueryError(errors.INTERNAL, "internal server error") from None


def encode_frame(message: Any, msg_id: Any, answer: bool = True) -> Frame:
    """A message as a frame. One that cannot be encoded is a server bug: a response becomes
    -32603, anything else is dropped (logged)."""
    try:
        body = jsoncodec.dumps(message)
    except Exception:
        log.exception("could not encode an outgoing message")
        if not answer:
            return ()
        body = jsoncodec.dumps({"jsonrpc": "2.0", "id": msg_id, "error": INTERNAL})
    return frame_parts(body)


def raw_result_frame(msg_id: Any, result: Raw) -> Frame | None:
    """The frame ``encode_frame`` makes of a response whose result is a large Raw (a 10,000
    session listing), with the result written from its own buffer rather than copied into an
    encoded response: the same bytes, one large allocation fewer. None when the id needs the
    encoder's fallback (a lone surrogate)."""
    try:
        prefix = b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(msg_id) + b',"result":'
    except (UnicodeEncodeError, TypeError):
        return None
    return header(len(prefix) + len(result) + 1) + prefix, memoryview(result), b"}"


def worker_pool() -> ThreadPoolExecutor:
    """Threads are made on demand and reused; the ceiling is high because a backend call that
    ignores its token must be awaited, and such calls must never starve live reads."""
    return ThreadPoolExecutor(max_workers=1024, thread_name_prefix="query")


class Dispatcher:
    """Runs methods of the table with a token each and answers them."""

    def __init__(self, executor: ThreadPoolExecutor | None = None) -> None:
        """``executor``: shared by every connection of a hub; a private one by default."""
        self.tokens = Tokens()
        self.executor = executor or worker_pool()

    def answer(
        self, msg_id: Any, method: Method, runtime: Runtime, params: Any, token: CancelToken
    ) -> Frame:
        """Run the method on this thread and encode its answer."""
        try:
            result = invoke(method, runtime, params, token)
        except QueryError as exc:
            message = {"jsonrpc": "2.0", "id": msg_id, "error": error_object(exc)}
            return encode_frame(message, msg_id)
        if type(result) is Raw and len(result) >= JOIN_BELOW:
            frame = raw_result_frame(msg_id, result)
            if frame is not None:
                return frame
        return encode_frame({"jsonrpc": "2.0", "id": msg_id, "result": result}, msg_id)

    def answer_inline(self, msg_id: Any, method: Method, runtime: Runtime, params: Any) -> Frame:
        """Answer on this thread with a token of its own, never registered, so nothing fires it:
        a token names one request (the jsonl backend shares a root survey among one request's
        calls)."""
        return self.answer(msg_id, method, runtime, params, CancelToken())

    def submit(
        self,
        msg_id: Any,
        method: Method,
        runtime: Runtime,
        params: Any,
        deliver: Callable[[Frame], None],
        progress: tuple[Tracker, Any] = (NULL_TRACKER, None),
    ) -> None:
        """Run the method in a worker thread under a token registered for ``msg_id`` and hand its
        encoded answer to ``deliver`` (in that thread). ``progress``: the request's tracker and
        the work-done token that shows it (server/workdone.py)."""
        token = self.tokens.register(msg_id, *progress)

        def work() -> None:
            try:
                frame = self.answer(msg_id, method, runtime, params, token)
            finally:
                self.tokens.release(msg_id)
            deliver(frame)

        self.executor.submit(work)

    def notify(self, method: Method, runtime: Runtime, params: Any) -> None:
        """A notification for one of our methods: run, never answered."""

        def work() -> None:
            try:
                invoke(method, runtime, params, CancelToken())
            except QueryError:
                pass

        self.executor.submit(work)

    async def run(
        self,
        msg_id: Any,
        method: Method,
        runtime: Runtime,
        params: Any,
        progress: tuple[Tracker, Any] = (NULL_TRACKER, None),
    ) -> Any:
        """For pygls handlers (``workspace/executeCommand``): the result, or the coded failure as
        the JsonRpcException pygls answers with. ``progress`` as for ``submit``."""
        token = self.tokens.register(msg_id, *progress)
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.executor, invoke, method, runtime, params, token)
        except QueryError as exc:
            raise to_rpc_error(exc) from None
        finally:
            self.tokens.release(msg_id)
