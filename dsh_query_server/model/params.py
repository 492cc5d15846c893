"""Params of a method: a msgspec struct whose fields say what each accepts and what a request that
breaks that is answered (semantics.md §3.0.2, §3.12, §7.3; protocol.md §2).

A field is one of two things:

- **checked**: typed, with an ``Expect`` saying what it must be. A value that does not convert
  to the type (or fails the ``Expect``'s own check), or a required one that is missing, is
  ``Expect.code`` with the message ``<field> must be <kind>``;
- **lenient**: typed ``Any`` (with ``Spec`` naming the type the schema states). Decoding never
  refuses it; absent, it is ``UNSET``. The service that reads it checks it with its own code and
  message, in the order the spec gives, which a decoder cannot keep (a window bound depends on
  the configuration, filters have their own language, search must say SEARCH_DISABLED first).

Fields are checked in declaration order, which is the order of semantics.md §3.12, and every
checked field comes before the checks its service makes: a params struct declares its checked
fields first in the spec's order, then its lenient ones. ``Params.validate`` runs after every
field's own check, for a rule across fields (none by default). Unknown keys are ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, get_args, get_origin

import msgspec
from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..values import is_number


class Params(msgspec.Struct, omit_defaults=True):
    def validate(self) -> None:
        """A rule across fields, after every field's own check; none by default."""


P = TypeVar("P", bound=Params)


@dataclass(frozen=True, slots=True)
class Expect:
    """What a checked field must be: ``kind`` completes ``<field> must be <kind>``; ``check`` is
    a rule the type cannot state, applied to the converted value."""

    kind: str
    code: str = errors.INVALID_REQUEST
    check: Callable[[Any], bool] | None = None

    def failure(self, field: str) -> QueryError:
        return QueryError(self.code, f"{field} must be {self.kind}")


@dataclass(frozen=True, slots=True)
class Spec:
    """The type the schema states for a field the struct holds as ``Any``."""

    type: object


# The fields most methods share (semantics.md §3.0.2).
SessionId = Annotated[str, Expect("a string")]
# Any JSON number, however large: one that names no event is EVENT_NOT_FOUND, not a bad request.
Seq = Annotated[Any, Spec(float), Expect("a number", check=is_number)]


class SessionIdParams(Params):
    sessionId: SessionId


class NoParams(Params):
    pass


@dataclass(frozen=True, slots=True)
class _Field:
    name: str  # the wire name, also the attribute
    type: object
    required: bool
    expect: Expect | None  # None: a lenient field


def metadata(tp: object) -> tuple[object, tuple[object, ...]]:
    """(the type inside ``Annotated``, its metadata); (tp, ()) for a plain type."""
    if get_origin(tp) is Annotated:
        inner, *extra = get_args(tp)
        return inner, tuple(extra)
    return tp, ()


def expect_of(tp: object) -> Expect | None:
    return next((m for m in metadata(tp)[1] if isinstance(m, Expect)), None)


def spec_of(tp: object) -> Spec | None:
    return next((m for m in metadata(tp)[1] if isinstance(m, Spec)), None)


@functools.cache
def fields(cls: type[Params]) -> tuple[_Field, ...]:
    """The fields of a params struct in declaration order. A field that is not ``Any`` must
    carry an ``Expect``: every way decoding can refuse a request has a coded message."""
    out: list[_Field] = []
    for f in msgspec.structs.fields(cls):
        if f.encode_name != f.name:
            raise TypeError(f"{cls.__name__}.{f.name}: params fields use their wire names")
        inner, _ = metadata(f.type)
        expect = expect_of(f.type)
        if inner is not Any and expect is None:
            raise TypeError(f"{cls.__name__}.{f.name} is checked: give it an Expect")
        out.append(_Field(f.name, f.type, f.required, expect))
    return tuple(out)


@functools.cache
def _rules(cls: type[Params]) -> tuple[tuple[str, Callable[[Any], bool], Expect], ...]:
    """The checked fields whose Expect has a rule beyond the type, in order."""
    return tuple(
        (f.name, f.expect.check, f.expect)
        for f in fields(cls)
        if f.expect is not None and f.expect.check is not None
    )


@functools.cache
def _required_lenient(cls: type[Params]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.required and f.expect is None)


def decode(cls: type[P], params: dict[str, Any]) -> P:
    """The params object of a request as ``cls``; the first failing field, in declaration
    order, as its coded error."""
    missing = [name for name in _required_lenient(cls) if name not in params]
    if missing:  # the service reports the absence with its own code
        params = {**params, **dict.fromkeys(missing, UNSET)}
    try:
        decoded = msgspec.convert(params, cls)
    except msgspec.ValidationError:
        raise _first_failure(cls, params) from None
    for name, check, expect in _rules(cls):
        if not check(getattr(decoded, name)):
            raise expect.failure(name)
    decoded.validate()
    return decoded


def _first_failure(cls: type[Params], params: dict[str, Any]) -> QueryError:
    for f in fields(cls):
        if f.expect is None:
            continue
        if f.name not in params:
            if f.required:
                return f.expect.failure(f.name)
            continue
        try:
            value = msgspec.convert(params[f.name], f.type)
        except msgspec.ValidationError:
            return f.expect.failure(f.name)
        if f.expect.check is not None and not f.expect.check(value):
            return f.expect.failure(f.name)
    # Unreachable while every checked field has an Expect (fields() insists on one).
    return QueryError(errors.INVALID_REQUEST, "params do not fit the method")
