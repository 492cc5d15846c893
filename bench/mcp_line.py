"""The MCP line (issue 15): ``session_search`` over MCP against ``searchSessions`` over JSON-RPC.

Two fresh servers on the same SQLite store and each on its own copy of the search index the
SQLite-bound searches built (so neither pays an index build, and no live overlay: the MCP server
has no ``sessionStore``): ``python -m dsh_query_server.mcp`` driven by the mcp SDK's own stdio
client, and ``python -m dsh_query_server`` over JSON-RPC. The workspace is ``/``, so every corpus
session is visible and the tool filters nothing out.

What the tool does per call (mcp/search_tool.py ``session_search``): ``searchSessions`` scoped to
the workspace inside the search service (the visible cwds and parents come from the index the
search's reconcile just brought in line, search/scope.py; no listing of the corpus), paged until
it has more than ``maxSearchResults`` (20 here) hits or the pages end, then one title batch for
the hits. The baseline replays the equivalent JSON-RPC requests: ``searchSessions`` pages with a
cwd filter naming every visible cwd, and, as "the title batch", one ``sessionQuery/readTitles``
for the hit ids. Target: the tool's p50 <= 1.5x the search pages' p50 + the title batch's p50.
The four calls are sampled in turn.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any

import anyio

from .core import BenchBase
from .stats import Row, Stats, log, measure
from .wire import WireClient

MAX_RESULTS = 20
FACTOR = 1.5


class McpSection(BenchBase):
    mcp_listing: Stats

    def mcp_line(self) -> None:
        if self.sqlite_index is None:
            log("mcp: skipped (needs the search section's index)")
            return
        rpc_index = os.path.join(self.tmp, "index-rpc.sqlite")
        mcp_index = os.path.join(self.tmp, "index-mcp.sqlite")
        shutil.copyfile(self.sqlite_index, rpc_index)
        shutil.copyfile(self.sqlite_index, mcp_index)
        persistence = f"sqlite:{self.db}?readOnly=true"
        log("mcp: a JSON-RPC server and an MCP server on the SQLite store")
        rpc = WireClient(
            ["--persistence", "none"],
            env=self.env(),
            timeout=1800,
            initialization_options={
                "persistence": persistence,
                "index": rpc_index,
                "checkpoint": {"mode": "manual"},
            },
        )
        try:
            anyio.run(self._measure, rpc, persistence, mcp_index)
        finally:
            rpc.close(timeout=60)

    def _pages(self, rpc: WireClient, phrase: str, cwds: list[str]) -> list[str]:
        """The tool's searchSessions pages over JSON-RPC; the ids it would keep."""
        request: dict[str, Any] = {
            "query": phrase,
            "eventFilters": [],
            "sessionFilters": [{"kind": "cwd", "values": cwds}],
        }
        ids: list[str] = []
        while True:
            page = rpc.request("sessionQuery/searchSessions", request)
            ids += [item["header"]["id"] for item in page["items"]]
            cursor = page.get("nextCursor")
            if len(ids) > MAX_RESULTS or cursor is None:
                return ids[:MAX_RESULTS]
            request["cursor"] = cursor

    async def _measure(self, rpc: WireClient, persistence: str, mcp_index: str) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        home = os.path.join(self.tmp, "mcp-home")  # never the user's config or histories
        os.makedirs(home, mode=0o700, exist_ok=True)
        env = {k: v for k, v in self.env().items() if not k.startswith(("XDG_", "DSH_"))}
        env.update(
            HOME=home,
            XDG_CACHE_HOME=os.path.join(home, ".cache"),
            XDG_STATE_HOME=os.path.join(home, ".state"),
            XDG_CONFIG_HOME=os.path.join(home, ".config"),
            DSH_HOME=os.path.join(home, ".dsh"),
        )
        params = StdioServerParameters(
            command=sys.executable,
            cwd=self.tmp,
            env=env,
            args=[
                "-m",
                "dsh_query_server.mcp",
                "--persistence",
                persistence,
                "--index",
                mcp_index,
                "--checkpoint",
                "manual",
                "--workspace",
                "/",
                "--max-search-results",
                str(MAX_RESULTS),
                "--no-hub",  # the tools in this process, as this line has always measured
            ],
        )
        listed = rpc.request("sessionQuery/listSessions")
        # What a per-call listing of the corpus (the tool's old scope step) would cost, for the notes.
        self.mcp_listing = measure(lambda i: rpc.call("sessionQuery/listSessions"), 5, budget=30)
        cwds = sorted(
            {r["header"]["cwd"] for r in listed if isinstance(r["header"].get("cwd"), str)}
        )
        with open(os.path.join(self.tmp, "mcp-stderr.log"), "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for label in ("rare", "medium", "common"):
                        await self._phrase(session, rpc, label, self.plan["phrases"][label], cwds)

    async def _phrase(
        self, session: Any, rpc: WireClient, label: str, phrase: str, cwds: list[str]
    ) -> None:
        first = await session.call_tool("session_search", {"query": phrase})  # warm both
        ids = self._pages(rpc, phrase, cwds)
        rpc.request("sessionQuery/readTitles", {"sessionIds": ids})
        structured = first.structured_content or {}
        tool_ids = [item["header"]["id"] for item in structured.get("items", [])]
        tool, search, titles = Stats(), Stats(), Stats()
        failed: list[str] = []
        started = time.perf_counter()
        for i in range(self.n(40)):
            t = time.perf_counter()
            result = await session.call_tool("session_search", {"query": phrase})
            tool.samples.append((time.perf_counter() - t) * 1000)
            if result.is_error:  # a timeout on a loaded machine: counted, not fatal
                failed.append(str(result.content)[:200])
            t = time.perf_counter()
            ids = self._pages(rpc, phrase, cwds)
            search.samples.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            rpc.request("sessionQuery/readTitles", {"sessionIds": ids})
            titles.samples.append((time.perf_counter() - t) * 1000)
            if i + 1 >= 3 and time.perf_counter() - started > 60 * self.iters:
                break
        allowed = FACTOR * search.p50 + titles.p50
        same = (
            "the same hits"
            if tool_ids == ids
            else f"DIFFERENT hits ({len(tool_ids)} vs {len(ids)})"
        )
        self.info.setdefault("mcp", {})[label] = {
            "tool": tool.to_json(),
            "search": search.to_json(),
            "titles": titles.to_json(),
        }
        self.add(
            Row(
                f"session_search over MCP '{phrase}' ({label})",
                tool,
                baseline=search,
                baseline_name="searchSessions pages, JSON-RPC",
                ratio=tool.p50 / search.p50,
                target=f"<= {FACTOR}x + titles ({allowed:.2f})",
                ok=tool.p50 <= allowed and not failed,
                note=f"{len(ids)} hits, {same} as JSON-RPC; the title batch (readTitles of"
                f" the hits over JSON-RPC) took {titles.p50:.2f} ms"
                + f"; a listSessions over JSON-RPC (no longer part of the tool's call)"
                f" p50 {self.mcp_listing.p50:.1f} ms"
                + (f"; {len(failed)} TOOL ERRORS, the first: {failed[0]}" if failed else ""),
            )
        )
