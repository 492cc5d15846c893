"""Decoding a method's params (model/params.py): the first field that breaks its Expect, in
declaration order, is the coded error; lenient fields are never refused; unknown keys are
ignored."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET

from dsh_query_server import errors
from dsh_query_server.errors import QueryError
from dsh_query_server.model.params import (
    Expect,
    Params,
    Seq,
    SessionId,
    Spec,
    decode,
    fields,
)
from dsh_query_server.values import is_number


class Three(Params, kw_only=True):
    sessionId: SessionId
    seq: Seq
    flag: Annotated[bool | None, Expect("a boolean", code=errors.INVALID_WINDOW)] = None
    loose: Annotated[Any, Spec(int)]  # lenient and required: UNSET when absent
    later: Annotated[Any, Spec(int)] = UNSET


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from([10**400, -(10**400), float("nan"), float("inf")])
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
ABSENT = object()


def expected_failure(params: dict[str, Any]) -> tuple[str, str] | None:
    """The spec's reading of Three, field by field (semantics.md §3.0.2, §3.12)."""
    if not isinstance(params.get("sessionId", ABSENT), str):
        return errors.INVALID_REQUEST, "sessionId must be a string"
    if not is_number(params.get("seq", ABSENT)):
        return errors.INVALID_REQUEST, "seq must be a number"
    flag = params.get("flag")
    if flag is not None and not isinstance(flag, bool):
        return errors.INVALID_WINDOW, "flag must be a boolean"
    return None


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "sessionId": st.text(max_size=3) | json_values,
            "seq": st.integers() | json_values,
            "flag": st.booleans() | json_values,
            "loose": json_values,
            "later": json_values,
            "unknown": json_values,
        },
    )
)
def test_the_first_failing_field_in_declaration_order_is_the_error(params):
    expected = expected_failure(params)
    try:
        decoded = decode(Three, params)
    except QueryError as exc:
        assert (exc.code, exc.message) == expected
        return
    assert expected is None
    assert decoded.sessionId == params["sessionId"]
    assert decoded.seq is params["seq"]  # a number of any size, as sent
    assert decoded.flag == params.get("flag")
    assert decoded.loose is params.get("loose", UNSET)  # lenient: as sent, UNSET when absent
    assert decoded.later is params.get("later", UNSET)


def test_key_order_in_the_request_does_not_change_the_error():
    forward = {"sessionId": 1, "seq": "x", "flag": 3}
    backward = dict(reversed(list(forward.items())))
    for params in (forward, backward):
        with pytest.raises(QueryError, match="^sessionId must be a string$"):
            decode(Three, params)


def test_a_cross_field_rule_runs_after_every_field():
    class Window(Params):
        first: Annotated[int, Expect("an integer")]
        last: Annotated[int, Expect("an integer")]

        def validate(self) -> None:
            if self.first > self.last:
                raise QueryError(errors.INVALID_REQUEST, "first must not exceed last")

    with pytest.raises(QueryError, match="^last must be an integer$"):
        decode(Window, {"first": 9, "last": "x"})
    with pytest.raises(QueryError, match="^first must not exceed last$"):
        decode(Window, {"first": 9, "last": 1})
    assert decode(Window, {"first": 1, "last": 9}) == Window(first=1, last=9)


def test_a_checked_field_needs_an_expect_and_its_wire_name():
    class Unchecked(Params):
        sessionId: str

    class Renamed(Params, rename="camel"):
        session_id: SessionId

    with pytest.raises(TypeError, match="give it an Expect"):
        fields(Unchecked)
    with pytest.raises(TypeError, match="wire names"):
        fields(Renamed)


def test_spec_states_the_schema_type_of_a_lenient_field():
    schema = msgspec.json.schema(Three)["$defs"]["Three"]
    assert schema["properties"]["sessionId"] == {"type": "string"}
    assert schema["required"] == ["sessionId", "seq", "loose"]
