"""The listing's row check (postgres.md §3.2, §3.3 step 1; rows.decode_header, which sync's and
every listing of a postgres: store runs on each session) reports exactly what the checks as the
spec lists them report: the same header, or the same first reason, for any header."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from dsh_query_server import jsoncodec
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.postgres import rows
from dsh_query_server.values import is_nonneg_safe_integer

MISSING = object()


def _optional(header: Header, wire: str, rule: Callable[[object], bool]) -> bool:
    value = header.get(wire)
    return value is UNSET or rule(value)


def reference(session_id: str, text: str, created_at: object | None) -> Header:
    """The checks one by one, in the spec's order, each evaluated (the unoptimized form)."""
    header = Header.from_json(text.encode("utf-8"))
    rows._require_format_v0(header)  # pyright: ignore[reportPrivateUsage]
    checks = (
        (header.id == session_id, "header id does not match the row's id"),
        (
            is_nonneg_safe_integer(header.created_at),
            "createdAt must be a non-negative safe integer",
        ),
        (created_at is None or created_at == header.created_at, "created_at does not match"),
        (_optional(header, "cwd", lambda v: isinstance(v, str)), "cwd must be a string"),
        (
            _optional(header, "parentSession", lambda v: isinstance(v, str)),
            "parentSession must be a string",
        ),
        (
            _optional(header, "agentPreset", lambda v: isinstance(v, str)),
            "agentPreset must be a string",
        ),
        (
            _optional(header, "seedLength", is_nonneg_safe_integer),
            "seedLength must be a non-negative safe integer",
        ),
        (
            _optional(header, "delegationDepth", is_nonneg_safe_integer),
            "delegationDepth must be a non-negative safe integer",
        ),
        (_optional(header, "origin", lambda v: v == "subagent"), 'origin must be "subagent"'),
    )
    for ok, reason in checks:
        if not ok:
            raise ValueError(reason)
    return header


ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.sampled_from([0, 1, -1, 2**53 - 1, 2**53, 1.0, 1.5, -0.0, 1e300]),
    st.sampled_from(["", "s", "subagent", "/w"]),
    st.lists(st.integers(0, 3), max_size=2),
)
FIELDS = ["version", "createdAt", "cwd", "parentSession", "seedLength", "origin"]
FIELDS += ["delegationDepth", "agentPreset"]


def outcome(call: Callable[[], Header]) -> Any:
    """The header's bytes, or the failure: a check's reason (the row's corruption error names
    it after the row), or any other error's type and message."""
    try:
        return ("ok", call().raw)
    except SessionPersistenceCorruptionError as exc:
        return ("reason", str(exc).split('": ', 1)[1])
    except ValueError as exc:
        return ("reason", str(exc))
    except Exception as exc:  # noqa: BLE001 - the failure itself is compared
        return (type(exc).__name__, str(exc))


VALID = st.fixed_dictionaries(
    {"version": st.just(0), "createdAt": st.integers(0, 2**53 - 1)},
    optional={
        "cwd": st.sampled_from(["/w", ""]),
        "parentSession": st.just("p"),
        "seedLength": st.integers(0, 5),
        "origin": st.just("subagent"),
        "delegationDepth": st.integers(0, 3),
        "agentPreset": st.just("a"),
    },
)


@settings(max_examples=800, deadline=None)
@given(
    st.sampled_from(["s", "s", "s", "t"]),
    VALID,
    st.dictionaries(st.sampled_from(FIELDS), ANY, max_size=2),  # valid fields made invalid
    st.lists(st.sampled_from(FIELDS), max_size=1),  # and fields left out
    st.one_of(st.none(), st.just("same"), st.integers(0, 3), st.booleans()),
)
def test_the_row_check_reports_as_the_spec_lists_it(
    session_id: str,
    valid: dict[str, Any],
    changed: dict[str, Any],
    removed: list[str],
    created_at: object | None,
) -> None:
    fields = {k: v for k, v in {**valid, **changed}.items() if k not in removed}
    text = jsoncodec.dumps({"id": "s", **fields}).decode()
    if created_at == "same":
        created_at = fields.get("createdAt")
    fast = outcome(lambda: rows.decode_header(session_id, text, created_at))
    assert fast == outcome(lambda: reference(session_id, text, created_at))
