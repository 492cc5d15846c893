"""tools.md §1.10: calls start in arrival order; a search runs alone, reads run together."""

from __future__ import annotations

import anyio
import pytest

from dsh_query_server.mcp.server import Scheduler

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_fifo_with_exclusive_searches() -> None:
    scheduler = Scheduler()
    log: list[str] = []
    release = {name: anyio.Event() for name in ("read1", "search", "read2", "read3")}

    async def run(name: str, exclusive: bool) -> None:
        async with scheduler.slot(exclusive):
            log.append(f"start {name}")
            await release[name].wait()
            log.append(f"end {name}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "read1", False)
        await anyio.sleep(0.01)
        tg.start_soon(run, "search", True)
        await anyio.sleep(0.01)
        tg.start_soon(run, "read2", False)  # arrived after the search: waits behind it
        await anyio.sleep(0.01)
        assert log == ["start read1"]
        release["read1"].set()
        await anyio.sleep(0.01)
        assert log == ["start read1", "end read1", "start search"]
        release["search"].set()
        await anyio.sleep(0.01)
        assert log[-2:] == ["end search", "start read2"]
        tg.start_soon(run, "read3", False)  # reads run together
        await anyio.sleep(0.01)
        assert log[-1] == "start read3"
        release["read2"].set()
        release["read3"].set()


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    scheduler = Scheduler()
    gate = anyio.Event()
    started: list[str] = []

    async def hold() -> None:
        async with scheduler.slot(True):
            await gate.wait()

    async def later() -> None:
        async with scheduler.slot(False):
            started.append("later")

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await anyio.sleep(0.01)
        with anyio.move_on_after(0.02):
            async with scheduler.slot(True):
                started.append("never")
        tg.start_soon(later)
        gate.set()
    assert started == ["later"]
