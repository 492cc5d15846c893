"""The ``postgres:`` mount URI (postgres.md §1): libpq URIs, our own parameters, redaction.

A URI is validated without a round trip: its query is split and percent-decoded here, our keys
(§1.2) are taken out, and what is left goes through ``psycopg.conninfo.conninfo_to_dict``. Every
message built here shows only the redacted URI, and no parameter value is ever echoed.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote

from psycopg import ProgrammingError, pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ... import errors
from ...errors import QueryError

SCHEMES = ("postgres://", "postgresql://")
REDACTED = "***"

_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_APP_NAME = re.compile(r"[\x20-\x7e]{1,63}")
_REFUSED = {
    "application_name": "; use applicationName",
    "fallback_application_name": "; use applicationName",
    "options": "",
    "client_encoding": "",
    "replication": "",
}
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_TARGET_ATTRS = ("any", "read-write", "read-only", "primary", "standby", "prefer-standby")
_CONNECT_TIMEOUT = 10  # seconds, or the statement timeout when shorter (at least libpq's 2)
_DEFAULTS = {
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}
_SECRET_KEYS = ("password", "sslpassword")


def _integer(text: str, low: int, high: int) -> int | None:
    if not (text.isascii() and text.isdigit()) or len(text) > 12:
        return None
    value = int(text)
    return value if low <= value <= high else None


def _boolean(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text)


@dataclass(frozen=True, slots=True)
class PgMount:
    """A validated ``postgres:`` URI: what libpq gets, our settings, and what to hide."""

    redacted: str
    libpq: dict[str, str]
    schema: str = "dsh_query"
    read_only: bool = False
    pool_size: int = 4
    pool_timeout_ms: int = 5000
    statement_timeout_ms: int = 30000
    application_name: str = "dsh-query"
    listen: bool = True
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def hosts(self) -> list[str]:
        return self.libpq.get("host", "").split(",")

    def scrub(self, text: str) -> str:
        """``text`` with every known secret replaced by ``***`` (§1.3)."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def conninfo(self) -> str:
        """The libpq conninfo string the pool connects with (our session settings included)."""
        settings = f"-c statement_timeout={self.statement_timeout_ms}"
        if self.read_only:
            settings += " -c default_transaction_read_only=on"
        return make_conninfo(
            "",
            **self.libpq,
            application_name=self.application_name,
            client_encoding="UTF8",
            options=settings,
        )

    def unauthenticated_tls_hosts(self) -> list[str]:
        """Non-loopback TCP hosts whose server identity libpq does not verify (§1.3)."""
        if self.libpq.get("sslmode") in ("verify-ca", "verify-full"):
            return []
        return [host for host in self.hosts if host and not _is_local(host)]


def _is_local(host: str) -> bool:
    if host.startswith(("/", "@")) or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def redact(uri: str) -> str:
    """The URI with ``***`` for the user-info password and the password parameters (§1.3)."""
    scheme, _, rest = uri.partition("://")
    head, question, query = rest.partition("?")
    netloc_end = len(head) if "/" not in head else head.index("/")
    netloc, path = head[:netloc_end], head[netloc_end:]
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + REDACTED
        netloc = f"{userinfo}@{hosts}"
    pairs: list[str] = []
    for pair in query.split("&") if question else []:
        key, eq, _value = pair.partition("=")
        pairs.append(f"{key}={REDACTED}" if eq and _safe_unquote(key) in _SECRET_KEYS else pair)
    return f"{scheme}://{netloc}{path}" + (f"?{'&'.join(pairs)}" if question else "")


def _safe_unquote(text: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        return text


def _secrets(uri: str, query_secrets: Iterable[str]) -> tuple[str, ...]:
    """Every form of every secret the URI or the environment holds, longest first."""
    found: set[str] = set(query_secrets)
    head = uri.partition("://")[2].partition("?")[0]
    netloc = head.split("/", 1)[0]
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        if ":" in userinfo:
            raw = userinfo.split(":", 1)[1]
            found.update((raw, _safe_unquote(raw)))
    env = os.environ.get("PGPASSWORD")
    if env:
        found.add(env)
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def _libpq_keys() -> frozenset[str]:
    return frozenset(d.keyword.decode() for d in pq.Conninfo.get_defaults())


class _Parser:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.redacted = redact(uri)

    def fail(self, detail: str) -> QueryError:
        return QueryError(
            errors.INVALID_CONFIG, f"session-query: postgres URI {self.redacted}: {detail}"
        )

    def pairs(self, query: str) -> list[tuple[str, str, str]]:
        """(key, decoded value, raw value) per query pair; refuses repeats and bad escapes."""
        seen: set[str] = set()
        out: list[tuple[str, str, str]] = []
        for pair in query.split("&"):
            raw_key, eq, raw_value = pair.partition("=")
            try:
                key = unquote(raw_key, errors="strict")
                value = unquote(raw_value, errors="strict")
            except UnicodeDecodeError:
                raise self.fail("the query is not valid UTF-8 after percent-decoding") from None
            if key in seen:
                raise self.fail(f'repeated parameter "{key}"')
            seen.add(key)
            if not eq:
                raise self.fail(f'parameter "{key}" must be key=value')
            out.append((key, value, raw_value))
        return out


def _ours(parser: _Parser, key: str, value: str, settings: dict[str, object]) -> None:
    """Validate one of our parameters (§1.2) into ``settings``."""
    checked: object | None
    if key == "schema":
        checked = value if _SCHEMA.fullmatch(value) and not value.startswith("pg_") else None
        rule = "a lower-case identifier of at most 63 characters, not pg_…"
    elif key in ("readOnly", "listen"):
        checked, rule = _boolean(value), "true or false"
    elif key == "poolSize":
        checked, rule = _integer(value, 1, 100), "an integer from 1 to 100"
    elif key == "poolTimeoutMs":
        checked, rule = _integer(value, 1, 600_000), "an integer from 1 to 600000"
    elif key == "statementTimeoutMs":
        checked, rule = _integer(value, 0, 2_147_483_647), "an integer from 0 to 2147483647"
    else:  # applicationName
        checked = value if _APP_NAME.fullmatch(value) else None
        rule = "1 to 63 printable ASCII characters"
    if checked is None:
        raise parser.fail(f'parameter "{key}" must be {rule}')
    settings[key] = checked


_OURS = (
    "schema",
    "readOnly",
    "poolSize",
    "poolTimeoutMs",
    "statementTimeoutMs",
    "applicationName",
    "listen",
)


def _check_values(parser: _Parser, libpq: dict[str, str]) -> None:
    if "sslmode" in libpq and libpq["sslmode"] not in _SSLMODES:
        raise parser.fail(f'parameter "sslmode" must be one of {", ".join(_SSLMODES)}')
    attrs = libpq.get("target_session_attrs")
    if attrs is not None and attrs not in _TARGET_ATTRS:
        raise parser.fail(
            f'parameter "target_session_attrs" must be one of {", ".join(_TARGET_ATTRS)}'
        )
    for port in libpq.get("port", "").split(",") if "port" in libpq else []:
        if port and _integer(port, 1, 65535) is None:
            raise parser.fail('parameter "port" must be an integer from 1 to 65535')
    timeout = libpq.get("connect_timeout")
    if timeout is not None and _integer(timeout, 0, 2_147_483_647) is None:
        raise parser.fail('parameter "connect_timeout" must be a non-negative integer')


def parse_postgres_uri(uri: str) -> PgMount:
    """Validate a ``postgres://`` or ``postgresql://`` URI (§1.1, §1.2); INVALID_CONFIG else."""
    parser = _Parser(uri)
    if not uri.startswith(SCHEMES):
        raise parser.fail("not a postgres:// or postgresql:// URI")
    if "#" in uri:
        raise parser.fail("a URI fragment is not allowed")
    base, question, query = uri.partition("?")
    allowed = _libpq_keys()
    settings: dict[str, object] = {}
    passed: list[str] = []
    query_secrets: list[str] = []
    for key, value, raw in parser.pairs(query) if question else []:
        if key in _OURS:
            _ours(parser, key, value, settings)
        elif key in _REFUSED:
            raise parser.fail(f'parameter "{key}" is set by dsh-query{_REFUSED[key]}')
        elif key not in allowed:
            raise parser.fail(f'unknown parameter "{key}"')
        else:
            if key in _SECRET_KEYS:
                query_secrets.extend((value, raw))
            passed.append(f"{key}={raw}")
    try:
        libpq = conninfo_to_dict(base + ("?" + "&".join(passed) if passed else ""))
    except ProgrammingError:
        raise parser.fail("not a valid libpq connection URI") from None
    values = {key: str(value) for key, value in libpq.items() if value is not None}
    _check_values(parser, values)
    read_only = bool(settings.get("readOnly", False))
    statement_ms = int(str(settings.get("statementTimeoutMs", 30000)))
    # A server that does not answer fails an operation no later than a statement would time out.
    connect = (
        _CONNECT_TIMEOUT if statement_ms == 0 else min(_CONNECT_TIMEOUT, -(-statement_ms // 1000))
    )
    values.setdefault("connect_timeout", str(max(2, connect)))
    for key, default in _DEFAULTS.items():
        values.setdefault(key, default)
    if not read_only and "," in values.get("host", ""):
        values.setdefault("target_session_attrs", "read-write")
    return PgMount(
        redacted=parser.redacted,
        libpq=values,
        schema=str(settings.get("schema", "dsh_query")),
        read_only=read_only,
        pool_size=int(str(settings.get("poolSize", 4))),
        pool_timeout_ms=int(str(settings.get("poolTimeoutMs", 5000))),
        statement_timeout_ms=statement_ms,
        application_name=str(settings.get("applicationName", "dsh-query")),
        listen=bool(settings.get("listen", True)),
        secrets=_secrets(uri, query_secrets),
    )
