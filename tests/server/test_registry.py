"""The method registry (server/registry.py, server/handlers/, hub/handlers.py): one table, one
typed handler per method, and everything that lists methods reads it.

The order of each method's request checks is pinned here against semantics.md §3.12 and
tools.md §2.6 with the params decoded exactly as the server decodes them; the wire tests
(test_server_e2e.py::test_error_codes, test_fuzz.py) check the same codes over stdio.
"""

from __future__ import annotations

import ast
import math
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET, Raw

from dsh_query_server import errors, schema
from dsh_query_server.cancel import CancelToken
from dsh_query_server.core.runtime import Runtime
from dsh_query_server.errors import QueryError
from dsh_query_server.export.params import ExportParams
from dsh_query_server.hub import handlers as hub_handlers
from dsh_query_server.hub.methods import METHODS as HUB_METHODS
from dsh_query_server.model.params import NoParams, Params, decode
from dsh_query_server.search.wire import SessionEventSearchRequest
from dsh_query_server.server import handlers
from dsh_query_server.server.envelope import OWN_PREFIXES
from dsh_query_server.server.handlers.events import ReadEventParams
from dsh_query_server.server.handlers.persistence import MountParams
from dsh_query_server.server.handlers.sessions import FilterSessionsParams
from dsh_query_server.server.handlers.store import CheckpointParams, CreateParams
from dsh_query_server.server.handlers.tree import ServerView, TreeChildrenParams
from dsh_query_server.server.methods import COMMANDS, METHODS
from dsh_query_server.server.registry import method, registered
from dsh_query_server.server.tree import VIEWS, commands

PACKAGE = Path(handlers.__file__).resolve().parents[2]
SERVER = PACKAGE / "server"


def test_every_method_is_registered_once_in_one_table():
    """The server's table is what server/handlers/ registers; a hub's adds its own hub/*."""
    assert dict(HUB_METHODS) == dict(registered())
    assert dict(METHODS) == {n: m for n, m in registered().items() if not n.startswith("hub/")}
    assert [n for n in HUB_METHODS if n not in METHODS] == [
        "hub/callTool",
        "hub/render",
        "hub/status",
        "hub/stop",
    ]
    assert list(METHODS) == sorted(METHODS) and list(HUB_METHODS) == sorted(HUB_METHODS)
    assert len(METHODS) >= 23
    with pytest.raises(ValueError, match="registered twice"):

        @method("sessionQuery/readEvent", params=NoParams, result=object, errors=())
        def again(rt: Runtime, p: NoParams, token: CancelToken) -> None:
            """A second readEvent."""

    assert registered()["sessionQuery/readEvent"].handler is handlers.events.read_event


def test_a_params_struct_with_an_uncoded_failure_is_refused_at_registration():
    class Unchecked(Params):
        sessionId: str  # no Expect: a wrong kind would have no coded message

    with pytest.raises(TypeError, match="Unchecked.sessionId is checked: give it an Expect"):

        @method("test/unchecked", params=Unchecked, result=object, errors=())
        def unchecked(rt: Runtime, p: Unchecked, token: CancelToken) -> None:
            """Never registered."""

    assert "test/unchecked" not in registered()


@pytest.mark.parametrize("name", sorted(HUB_METHODS))
def test_each_handler_is_typed_as_it_is_registered(name):
    m = HUB_METHODS[name]
    hints = typing.get_type_hints(m.handler)
    params = [hints[p] for p in m.handler.__code__.co_varnames[:3]]
    assert params == [Runtime, m.params, CancelToken], name
    # A handler may answer its result pre-encoded (listSessions joins raw headers).
    assert hints["return"] in (m.result, Raw), name
    assert m.summary and m.summary == " ".join(m.summary.split())
    if name.startswith("hub/"):
        assert m.handler.__module__ == hub_handlers.__name__
    else:
        assert m.handler.__module__.startswith("dsh_query_server.server.handlers.")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_where_a_method_is_handled_is_one_grep(name):
    """Inside server/, the method's name is spelled once: in its handler's module."""
    found = [
        (path, text.count(f'"{name}"'))
        for path in sorted(SERVER.rglob("*.py"))
        if f'"{name}"' in (text := path.read_text(encoding="utf-8"))
    ]
    module = METHODS[name].handler.__module__.rsplit(".", 1)[-1]
    assert found == [(SERVER / "handlers" / f"{module}.py", 1)], found


def test_handlers_are_short_functions_with_no_table_of_callables():
    """No lambda between the wire and the service; a handler is its docstring and at most two
    statements (one service call and the result)."""
    for path in [
        SERVER / "registry.py",
        SERVER / "methods.py",
        *(SERVER / "handlers").glob("*.py"),
        PACKAGE / "hub" / "handlers.py",
        PACKAGE / "hub" / "methods.py",
    ]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)], path
    for m in HUB_METHODS.values():
        source = Path(m.handler.__code__.co_filename).read_text(encoding="utf-8")
        node = next(
            n
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.FunctionDef) and n.name == m.handler.__name__
        )
        assert len(node.body) <= 3, m.name  # the docstring, then at most two statements


def test_commands_and_inline_methods_come_from_the_registrations():
    assert sorted(COMMANDS) == sorted(commands.SERVER_COMMANDS)
    assert {c: m.name for c, m in COMMANDS.items()} == {
        commands.SERVER_MOUNT: "sessionPersistence/mount",
        commands.SERVER_UNMOUNT: "sessionPersistence/unmount",
        commands.SERVER_CHECKPOINT: "sessionStore/checkpoint",
        commands.SERVER_STATUS: "sessionPersistence/status",
    }
    assert [m.name for m in METHODS.values() if m.inline] == ["sessionPersistence/status"]
    # The namespaces whose requests keep plain JSON params, unknown methods in them too.
    assert OWN_PREFIXES == ("sessionPersistence/", "sessionQuery/", "sessionStore/")


def test_the_schema_is_the_registry():
    document = schema.build()
    assert list(document["methods"]) == list(HUB_METHODS)
    for name, m in HUB_METHODS.items():
        entry = document["methods"][name]
        assert entry["params"] == {"$ref": f"#/$defs/{m.params.__name__}"}, name
        assert entry["summary"] == m.summary
        assert [e["code"] for e in entry["errors"]] == [*m.errors, errors.INTERNAL]
    assert document["commands"] == {c: {"method": m.name} for c, m in COMMANDS.items()}


def test_the_tree_views_are_the_view_enum():
    assert [v.value for v in ServerView] == list(VIEWS)


# -- the order of the request checks (semantics.md §3.12, tools.md §2.6) ----------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)
ABSENT = object()


def outcome(name: str, params: dict[str, Any]) -> tuple[str, str] | Params:
    try:
        return decode(METHODS[name].params, params)
    except QueryError as exc:
        return exc.code, exc.message


def kind_error(field: str, kind: str, code: str = errors.INVALID_REQUEST) -> tuple[str, str]:
    return code, f"{field} must be {kind}"


def number(value: Any) -> bool:
    """A JSON number: any int (not a bool), or a finite float."""
    return type(value) is int or (type(value) is float and math.isfinite(value))


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "sessionId": st.sampled_from(["s"]) | json_values,
            "seq": st.integers() | json_values,
            "before": json_values,
            "after": json_values,
        },
    )
)
def test_read_event_checks_session_id_then_seq(params):
    """readEvent: INVALID_REQUEST (sessionId, then seq kind); the window is the service's."""
    got = outcome("sessionQuery/readEvent", params)
    if not isinstance(params.get("sessionId", ABSENT), str):
        assert got == kind_error("sessionId", "a string")
    elif not number(params.get("seq", ABSENT)):
        assert got == kind_error("seq", "a number")
    else:
        assert isinstance(got, ReadEventParams)
        assert (got.before, got.after) == (params.get("before", UNSET), params.get("after", UNSET))


EXPORT_KINDS = [  # tools.md §2.4, §2.6: each field's kind in this order, then outputPath
    ("sessionId", "a string", lambda v: isinstance(v, str)),
    ("outputPath", "a string", lambda v: isinstance(v, str)),
    ("includeDescendants", "a boolean", lambda v: v is None or isinstance(v, bool)),
    ("includeMedia", "a boolean", lambda v: v is None or isinstance(v, bool)),
    ("overwrite", "a boolean", lambda v: v is None or isinstance(v, bool)),
    (
        "workspaceRoots",
        "an array of absolute paths",
        lambda v: (
            v is None
            or (isinstance(v, list) and all(isinstance(r, str) and r.startswith("/") for r in v))
        ),
    ),
]


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "sessionId": st.just("s") | json_values,
            "outputPath": st.sampled_from(["/o.zip", "o.zip"]) | json_values,
            "includeDescendants": st.booleans() | json_values,
            "includeMedia": st.booleans() | json_values,
            "overwrite": st.booleans() | json_values,
            "workspaceRoots": st.lists(st.sampled_from(["/w", "w"]), max_size=2) | json_values,
        },
    )
)
def test_export_checks_every_kind_then_an_absolute_output_path(params):
    got = outcome("sessionQuery/exportSession", params)
    for field, kind, ok in EXPORT_KINDS:
        required = field in ("sessionId", "outputPath")
        if not ok(params.get(field, ABSENT if required else None)):
            assert got == kind_error(field, kind)
            return
    if not params["outputPath"].startswith("/"):
        assert got == (errors.INVALID_REQUEST, "outputPath must be an absolute path")
        return
    assert isinstance(got, ExportParams)
    assert got.workspaceRoots == params.get("workspaceRoots")


@pytest.mark.parametrize(
    "name,params,expected",
    [
        ("sessionQuery/readTitles", {"sessionIds": [1]}, kind_error("sessionIds", "an array of strings")),
        ("sessionQuery/readTitles", {}, kind_error("sessionIds", "an array of strings")),
        ("sessionQuery/traceEvent", {"seq": 0}, kind_error("sessionId", "a string")),
        ("sessionQuery/traceEvent", {"sessionId": "s", "seq": True}, kind_error("seq", "a number")),
        ("sessionQuery/filterEvents", {"filters": 5}, kind_error("sessionId", "a string")),
        ("sessionStore/append", {"sessionId": 5}, kind_error("sessionId", "a string", errors.STORE_INVALID_EVENT)),
        ("sessionStore/remove", {}, kind_error("sessionId", "a string")),
        ("sessionStore/checkpoint", {"sessionId": 5}, kind_error("sessionId", "a string")),
        (
            "sessionQuery/treeChildren",
            {"view": "nope", "nodeId": 5},
            kind_error("view", "one of sessions, lineage, events, eventTrace"),
        ),
        ("sessionQuery/treeChildren", {"view": "events", "nodeId": 5}, kind_error("nodeId", "a string")),
        ("sessionQuery/treeParent", {"view": "events"}, kind_error("nodeId", "a string")),
    ],
)  # fmt: skip
def test_request_kinds_answer_their_codes(name, params, expected):
    assert outcome(name, params) == expected


def test_null_is_absent_where_the_spec_says_so():
    checkpoint = decode(CheckpointParams, {"sessionId": None})
    assert checkpoint.sessionId is None
    roots = decode(TreeChildrenParams, {"view": "sessions", "nodeId": None})
    assert roots.nodeId is None and roots.args is UNSET
    assert decode(CreateParams, {"header": {"id": "x"}, "seed": None}).seed is None


def test_fields_the_services_check_are_passed_through_as_sent():
    """Filters, windows, search fields, headers and URIs keep their own codes and messages, so
    decoding hands them over untouched (UNSET when absent)."""
    filters = [{"kind": "nope"}]
    assert decode(FilterSessionsParams, {"filters": filters}).filters is filters
    assert decode(FilterSessionsParams, {}).filters is UNSET
    search = decode(SessionEventSearchRequest, {"sessionId": 5, "cursor": None})
    assert (search.sessionId, search.query, search.cursor) == (5, UNSET, None)
    assert decode(MountParams, {}).uri is UNSET
    registered_as = {
        "sessionStore/checkpoint": CheckpointParams,
        "sessionQuery/treeChildren": TreeChildrenParams,
        "sessionStore/create": CreateParams,
        "sessionQuery/filterSessions": FilterSessionsParams,
        "sessionQuery/searchEvents": SessionEventSearchRequest,
        "sessionPersistence/mount": MountParams,
        "sessionQuery/readEvent": ReadEventParams,
    }
    assert {name: METHODS[name].params for name in registered_as} == registered_as
