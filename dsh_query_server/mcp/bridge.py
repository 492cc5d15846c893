"""The MCP tools run inside the hub (hub.md §3, **[ours]**): ``dsh-query mcp`` keeps speaking
MCP to its agent (schema checks, the scheduler, the deadline, the workspace step) and
sends each tool call to its hub as ``hub/callTool`` (hub/handlers.py); the hub runs it with
``run_tool``, the very tool functions an in-process server runs (tools.py, search_tool.py,
usage_tool.py, browse_tool.py), against its shared service, so a tool answers the same either
way.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import errors, jsoncodec
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..errors import QueryError
from ..hub.handlers import CallToolParams, CallToolResult, ToolFailure
from ..model.workspace import Workspace
from . import browse_tool, usage_tool
from .args import TOOL_BY_NAME, ToolError
from .tools import TOOL_FAILED, Call, Interrupted

RUN = {**usage_tool.RUN, **browse_tool.RUN}  # every tool, by name

log = logging.getLogger("dsh_query_server.mcp")


def run(name: str, call: Call, arguments: dict[str, Any]) -> Any:
    """The tool's outcome: (text, structured), a ToolError, or Interrupted. Never raises.
    Both ways of serving the tools run them through here (in dsh-query mcp --no-hub, or in the
    hub for hub/callTool)."""
    try:
        result = RUN[name](call, arguments)
        return result.text, result.structured
    except (ToolError, Interrupted) as exc:
        return exc
    except BaseException:  # a bug: logged, answered as a tool failure
        log.exception("tool %s failed unexpectedly", name)
        return ToolError(TOOL_FAILED, "session query operation failed")


def run_tool(rt: Runtime, p: CallToolParams, token: CancelToken) -> CallToolResult:
    """hub/callTool in the hub (its ToolRunner): the tool's outcome as the result."""
    if p.name not in TOOL_BY_NAME:
        raise QueryError(errors.INVALID_REQUEST, "name must be a tool name")
    workspace = Workspace(p.workspace.roots, p.workspace.base, p.workspace.source)
    outcome = run(p.name, Call(rt, token, workspace, p.caller, p.maxResults), p.arguments)
    if isinstance(outcome, Interrupted):
        return CallToolResult(interrupted=True)
    if isinstance(outcome, ToolError):
        if outcome.reason is not None:  # the hub's log keeps what the sanitizer hid: one line
            log.warning("tool %s failed: %s", p.name, outcome.reason)
        return CallToolResult(error=ToolFailure(outcome.code, outcome.message))
    text, structured = outcome
    return CallToolResult(text=text, structured=jsoncodec.to_builtins(structured))


__all__ = ["run", "run_tool"]
