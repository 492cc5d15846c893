"""The MCP tools run inside the hub (hub.md §3, **[ours]**): ``dsh-query mcp`` keeps speaking
MCP to its agent (schema checks, the scheduler, the deadline, the roots/list scope step) and
sends each tool call to its hub as ``hub/callTool``; the hub runs the very tool functions an
in-process server runs (tools.py, search_tool.py) against its shared service, so a tool answers
the same either way.

params ``{name, arguments, workspace: {roots, base}, caller, maxResults}``; result
``{text, structured}``, ``{error: {code, message}}`` (a tool error, already sanitized) or
``{interrupted: true}`` (the request's token fired: the MCP side decides between its timeout
and a cancellation, tools.md §1.10).
"""

from __future__ import annotations

import logging
from typing import Any

from .. import errors, jsoncodec
from ..cancel import CancelToken
from ..errors import QueryError
from ..query.workspace import Workspace
from ..server.methods import Call as MethodCall
from ..server.runtime import Runtime
from .args import TOOL_BY_NAME, ToolError
from .search_tool import RUN
from .tools import TOOL_FAILED, Call, Interrupted

log = logging.getLogger("dsh_query_server.mcp")
CALL_TOOL = "hub/callTool"


def _invalid(detail: str) -> QueryError:
    return QueryError(errors.INVALID_REQUEST, f"{CALL_TOOL}: {detail}")


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


def call_tool(rt: Runtime, p: dict[str, Any], token: CancelToken) -> Any:
    name = p.get("name")
    arguments = p.get("arguments")
    workspace = p.get("workspace")
    caller = p.get("caller")
    max_results = p.get("maxResults")
    if not isinstance(name, str) or name not in TOOL_BY_NAME:
        raise _invalid("name must be a tool name")
    if not isinstance(arguments, dict):
        raise _invalid("arguments must be an object")
    roots = workspace.get("roots") if isinstance(workspace, dict) else None
    base = workspace.get("base") if isinstance(workspace, dict) else None
    if not (isinstance(roots, list) and all(isinstance(r, str) for r in roots)):
        raise _invalid("workspace.roots must be an array of strings")
    if not isinstance(base, str):
        raise _invalid("workspace.base must be a string")
    if caller is not None and not isinstance(caller, str):
        raise _invalid("caller must be a string or null")
    if not (isinstance(max_results, int) and not isinstance(max_results, bool) and max_results > 0):
        raise _invalid("maxResults must be a positive integer")
    call = Call(rt, token, Workspace(roots, base), caller, max_results)
    outcome = run(name, call, arguments)
    if isinstance(outcome, Interrupted):
        return {"interrupted": True}
    if isinstance(outcome, ToolError):
        return {"error": {"code": outcome.code, "message": outcome.message}}
    text, structured = outcome
    return {"text": text, "structured": jsoncodec.to_builtins(structured)}


METHODS: dict[str, MethodCall] = {CALL_TOOL: call_tool}

__all__ = ["CALL_TOOL", "METHODS", "call_tool", "run"]
