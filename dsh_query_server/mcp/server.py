"""``dsh-query mcp``: the eight history tools over MCP stdio (tools.md §1), on the SDK's low-level
server, answered from the hub's shared service (hub.md §3) or, with ``--no-hub``, from a query
service in this process (runners.py).

Each tool call: schema check, a place in the FIFO scheduler (searches exclusive), the deadline,
the scope step (the configured workspace; roots/list only for an older client that declared
roots, cached until roots/list_changed), then the tool in a worker thread with its own
CancelToken. Nothing but protocol messages reaches stdout; each failed call logs one line on
stderr. No deprecated SDK call is made (roots/list goes out as a plain request), so the SDK
never warns (MCPDeprecationWarning).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..model.workspace import Workspace
from . import config as mcp_config
from .args import TOOL_BY_NAME, TOOLS, ToolError, check_schema
from .progress import tracker_for
from .runners import ToolRunner
from .scope import (
    FROM_CONFIG,
    FROM_ROOTS,
    FROM_START,
    roots_apply,
    roots_from_uris,
    working_directory,
)
from .tools import TOOL_FAILED, TOOL_TIMEOUT, Interrupted, pre_scope

log = logging.getLogger("dsh_query_server.mcp")

INSTRUCTIONS = (
    "Use session_search to find relevant work from prior sessions, or session_event_search to "
    "search earlier events in one session. Search results are cursor-free and workspace-scoped. "
    "Follow a useful hit with session_trace, session_event_trace, or session_event_read when you "
    "need lineage, relationships, or exact data."
)
ROOTS_TIMEOUT_S = 5.0
STRUCTURED_SINCE = "2025-06-18"
INVALID_PARAMS = -32602


class Scheduler:
    """Calls start in arrival order; a search runs alone, reads and traces run together."""

    def __init__(self) -> None:
        self._waiting: deque[tuple[bool, anyio.Event]] = deque()
        self._shared = 0
        self._exclusive = False

    def _pump(self) -> None:
        while self._waiting:
            exclusive, event = self._waiting[0]
            if self._exclusive or (exclusive and self._shared):
                return
            self._waiting.popleft()
            if exclusive:
                self._exclusive = True
            else:
                self._shared += 1
            event.set()

    @contextlib.asynccontextmanager
    async def slot(self, exclusive: bool) -> AsyncIterator[None]:
        entry = (exclusive, anyio.Event())
        self._waiting.append(entry)
        self._pump()
        try:
            await entry[1].wait()
        except BaseException:  # cancelled while queued: leave the queue (or give the slot back)
            self._release(entry)
            raise
        try:
            yield
        finally:
            self._release(entry)

    def _release(self, entry: tuple[bool, anyio.Event]) -> None:
        if not entry[1].is_set():
            self._waiting.remove(entry)
        elif entry[0]:
            self._exclusive = False
        else:
            self._shared -= 1
        self._pump()


class McpApp:
    def __init__(self, cfg: mcp_config.McpConfig, tools: ToolRunner) -> None:
        self.cfg = cfg
        self.tools = tools
        self.base = working_directory()
        self.scheduler = Scheduler()
        self.executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dsh-mcp")
        self._roots: list[str] | None = None
        self._roots_generation = 0
        self.server: Server[Any] = Server(
            "dsh-query",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        self.server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self.roots_changed
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        annotations = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
        window_max = self.cfg.server.read_window_max
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.input_schema(window_max),
                    annotations=annotations,
                )
                for t in TOOLS
            ]
        )

    async def roots_changed(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams | None
    ) -> None:
        self._roots = None
        self._roots_generation += 1

    async def workspace(self, ctx: ServerRequestContext[Any]) -> Workspace:
        """§1.2: the server's configuration (--workspace) always wins; else the roots of a
        client on an older protocol that declared them and listed at least one; else the
        directory the server started in."""
        if self.cfg.workspace:
            return Workspace(self.cfg.workspace, self.base, FROM_CONFIG)
        caps = ctx.session.client_capabilities
        declared = caps is not None and caps.roots is not None
        if roots_apply(False, ctx.protocol_version, declared):
            roots = await self._client_roots(ctx)
            if roots:
                return Workspace(roots, self.base, FROM_ROOTS)
        return Workspace([self.base], self.base, FROM_START)

    async def _client_roots(self, ctx: ServerRequestContext[Any]) -> list[str]:
        """The client's file: roots, asked once and cached until roots/list_changed. Sent as a
        plain request: the SDK's list_roots() is deprecated and warns on every use. A failed or
        slow answer counts as no roots (one line on stderr), so the call still answers."""
        roots = self._roots
        if roots is not None:
            return roots
        generation = self._roots_generation
        try:
            with anyio.fail_after(ROOTS_TIMEOUT_S):
                result = await ctx.session.send_request(
                    types.ListRootsRequest(), types.ListRootsResult
                )
            roots = roots_from_uris([str(r.uri) for r in result.roots])
        except Exception as exc:  # noqa: BLE001 - any failure means no roots
            log.warning("roots/list failed (%s); using %s", _reason(exc), FROM_START)
            roots = []
        if generation == self._roots_generation:
            self._roots = roots
        return roots

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = TOOL_BY_NAME.get(params.name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        structured = ctx.protocol_version >= STRUCTURED_SINCE
        arguments: dict[str, Any] = dict(params.arguments or {})
        try:
            check_schema(spec, arguments)
            pre_scope(spec.name, arguments, self.cfg.server.read_window_max)
        except ToolError as exc:
            return _failed(spec.name, exc, structured)
        # notifications/progress when the client sent a progressToken (progress.py)
        tracker = tracker_for(
            ctx.meta,
            ctx.session,
            asyncio.get_running_loop(),
            ctx.request_id,
            f"dsh-query {spec.name}",
        )
        token = CancelToken() if tracker is None else CancelToken(tracker)
        timed_out = False
        async with self.scheduler.slot(spec.search):
            handle = None
            if spec.search:

                def expire() -> None:
                    nonlocal timed_out
                    timed_out = True
                    token.cancel()

                handle = asyncio.get_running_loop().call_later(
                    self.cfg.search_timeout_ms / 1000, expire
                )
            try:
                workspace = await self.workspace(ctx)
                cfg = self.cfg
                token.progress.arm()
                outcome = await self._in_thread(
                    lambda: self.tools.run(
                        spec.name, arguments, workspace, cfg.caller, cfg.max_search_results, token
                    ),
                    token,
                )
            finally:
                token.progress.finish("cancelled" if token.cancelled else "done")
                if handle is not None:
                    handle.cancel()
        if isinstance(outcome, Interrupted) or (token.cancelled and timed_out):
            if timed_out:
                message = f"tool call timed out after {self.cfg.search_timeout_ms}ms"
                return _failed(spec.name, ToolError(TOOL_TIMEOUT, message), structured)
            failure = ToolError(TOOL_FAILED, "session query operation failed", "cancelled")
            return _failed(spec.name, failure, structured)
        if isinstance(outcome, ToolError):
            return _failed(spec.name, outcome, structured)
        text, content = outcome
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_wire_text(text))],
            structured_content=_wire_safe(content) if structured else None,
            is_error=False,
        )

    async def _in_thread(self, fn: Any, token: CancelToken) -> Any:
        """Run ``fn`` in a worker; a cancellation fires the token and waits for the work to settle
        (semantics.md §3.0.6) before it propagates."""
        future = asyncio.get_running_loop().run_in_executor(self.executor, fn)
        try:
            return await asyncio.shield(future)
        except BaseException:
            token.cancel()
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(BaseException):
                    await future
            raise


def _wire_text(text: str) -> str:
    """Lone UTF-16 surrogates (JavaScript-written logs hold them) have no UTF-8 form, and the SDK
    encodes UTF-8: each becomes U+FFFD, so the answer is still sent."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _wire_safe(value: Any) -> Any:
    """``_wire_text`` over every string (keys too) of a JSON value, iteratively."""
    if isinstance(value, str):
        return _wire_text(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, node = stack.pop()
        if isinstance(node, dict):
            copy: dict[str, Any] = {}
            for k, v in node.items():
                copy[_wire_text(k)] = v
            parent[key] = copy
            stack.extend((copy, k, v) for k, v in copy.items() if isinstance(v, (dict, list, str)))
        elif isinstance(node, list):
            items = list(node)
            parent[key] = items
            stack.extend(
                (items, i, v) for i, v in enumerate(items) if isinstance(v, (dict, list, str))
            )
        else:
            parent[key] = _wire_text(node)
    return root[0]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failed(tool: str, exc: ToolError, structured: bool) -> types.CallToolResult:
    """An expected failure: one line on stderr (with what the sanitizer hid, if anything),
    never a traceback, and the tool result (§1.9)."""
    cause = f" ({exc.reason})" if exc.reason else ""
    log.warning("%s failed: %s %s%s", tool, exc.code, exc.message, cause)
    return _error(exc.code, exc.message, structured)


def _error(code: str, message: str, structured: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"Error: {message}")],
        structured_content={"error": {"code": code, "message": message}} if structured else None,
        is_error=True,
    )


def _runner(cfg: mcp_config.McpConfig, preload: Callable[[Runtime], None] | None) -> ToolRunner:
    """The hub's (started when none runs), or with --no-hub a runtime of this process; a hub
    that cannot be reached stops start-up with status 2 and the reason on stderr."""
    from .runners import HubTools, LocalTools

    if cfg.hub_options is not None:
        from ..hub.start import HubStartError
        from ..rundir import RunDirError

        try:
            return HubTools(cfg.hub_options)
        except (HubStartError, RunDirError, OSError) as exc:
            sys.stderr.write(f"dsh-query mcp: {exc}\n")
            sys.stdout.flush()
            os._exit(2)
    runtime = Runtime(cfg.server, None)  # MCP has no change notifications to send
    runtime.start()
    if preload is not None:
        preload(runtime)
    return LocalTools(runtime)


def main(argv: list[str] | None = None, preload: Callable[[Runtime], None] | None = None) -> None:
    """``preload`` fills the runtime once it is up (``dsh-query mcp --demo``)."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    cfg = mcp_config.load(list(sys.argv[1:] if argv is None else argv))
    tools = _runner(cfg, preload)
    app = McpApp(cfg, tools)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await app.server.run(read, write, app.server.create_initialization_options())

    code = 0
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        code = 130
    finally:
        tools.close()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        # Worker threads may sit in a hung backend call: leave without waiting for them.
        os._exit(code)
