"""Work-done tokens of work that is no request (the index warm-up, semantics.md §6.5 [ours]):
``Tokens.watch`` maps the token a client may cancel to the work's stop; once the work's progress
has ended (or the client refused to create the token) the entry goes, so a long-lived connection
keeps none of them. The token's owner is a real ``Tracker`` over a real ``LspSink``; the
connection is a recorder of the frames the sink writes (what is sent is pinned over the wire in
test_progress_wire.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_query_server.server.dispatch import Frame, Tokens
from dsh_query_server.server.workdone import tracker_with


class _Connection:
    """The sink's side of a connection: frames recorded, token creation answered ``ok``."""

    direct_writes = True
    closed = False

    def __init__(self, ok: bool) -> None:
        self.ok = ok
        self.frames: list[Frame] = []

    def write_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def send_request(
        self, method: str, params: Any = None, callback: Any = None, msg_id: Any = None
    ) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.ok:
            future.set_result(None)
        else:
            future.set_exception(RuntimeError("the client refused the token"))
        return future


async def _watch_and_finish(ok: bool) -> tuple[Tokens, Any, list[bool]]:
    tokens, stopped = Tokens(), []
    loop = asyncio.get_running_loop()
    out = _Connection(ok)
    tracker, token = tracker_with(out, loop, "warm", None, True, delay=0, closed=tokens.unwatch)
    tokens.watch(token, lambda: stopped.append(True))
    tracker.arm()
    for _ in range(50):  # the create request's answer comes on the loop
        await asyncio.sleep(0.01)
    tracker.finish("done")
    return tokens, token, stopped


def test_a_watched_token_is_dropped_when_its_progress_ends():
    tokens, token, stopped = asyncio.run(_watch_and_finish(ok=True))
    assert tokens.cancel_progress(token) is False  # names nothing any more
    assert stopped == []


def test_a_watched_token_the_client_refused_is_dropped():
    tokens, token, stopped = asyncio.run(_watch_and_finish(ok=False))
    assert tokens.cancel_progress(token) is False
    assert stopped == []


def test_a_watched_token_cancels_its_work_while_it_runs():
    async def run() -> list[bool]:
        tokens, stopped = Tokens(), []
        out = _Connection(ok=True)
        loop = asyncio.get_running_loop()
        tracker, token = tracker_with(out, loop, "warm", None, True, delay=0, closed=tokens.unwatch)
        tokens.watch(token, lambda: stopped.append(True))
        tracker.arm()
        await asyncio.sleep(0.05)
        assert tokens.cancel_progress(token) is True
        tracker.finish("cancelled")
        return stopped

    assert asyncio.run(run()) == [True]
