"""The MCP layer against the method registry: mcp/ may not import server/ (the structure check),
so what it calls is checked here. Every service call goes through ``Call.svc`` named by the
registered method it stands for, and every code that method can answer is a row of the
sanitizer's table (tools.md §1.9): it keeps its code with the row's message, or it is one of the
codes the table turns into a tool failure."""

from __future__ import annotations

import ast
from pathlib import Path

from dsh_query_server import errors
from dsh_query_server.mcp import tools
from dsh_query_server.server.methods import METHODS

MCP = Path(tools.__file__).resolve().parent


def called_methods() -> dict[str, list[str]]:
    """Method name -> where ``svc`` is called with it (file:line), over every module of mcp/."""
    found: dict[str, list[str]] = {}
    for path in sorted(MCP.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "svc"
            ):
                first = node.args[0]
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    f"{path.name}:{node.lineno}: svc names its method with a literal"
                )
                found.setdefault(first.value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_service_call_names_a_registered_method():
    called = called_methods()
    assert len(called) >= 8, called
    assert set(called) <= set(METHODS), sorted(set(called) - set(METHODS))


# tools.md §1.9, the table's last row.
TOOL_FAILURES = {
    errors.INVALID_CONFIG,
    errors.SOURCE_CONFLICT,
    errors.INVALID_REQUEST,
    errors.INTERNAL,
    errors.EXPORT_FAILED,
}


def test_every_code_those_methods_answer_is_a_row_of_the_sanitizer():
    for name in called_methods():
        for code in [*METHODS[name].errors, errors.INTERNAL]:
            if code in TOOL_FAILURES:
                assert tools.sanitize(code) == (tools.TOOL_FAILED, tools.FAILED_MESSAGE), code
            else:
                assert tools.sanitize(code) == (code, tools.SANITIZED[code]), (name, code)
