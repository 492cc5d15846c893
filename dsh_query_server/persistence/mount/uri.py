"""Mount URIs (persistence.md §1): ``jsonl:<root>?k=v`` and ``sqlite:<path>?k=v``.

Over the wire a URI that does not parse is INVALID_CONFIG and a well-formed URI whose backend
cannot be opened is PERSISTENCE_FAILED (protocol.md §5). protocol.md lists a relative path among
the parse failures, so wire URIs must be absolute; the command line resolves relative paths
against the working directory before building its URI (``resolve.absolute_uri``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote_to_bytes

from ... import errors
from ...errors import QueryError, inner_message
from ...resolve import HOME_SCHEMES, PATH_SCHEMES

if TYPE_CHECKING:  # parsing loads no backend: the command line checks URIs before a hub answers
    from ..contract.backend import PersistenceBackend

_OPTIONS = {
    "jsonl": {
        "compression": ("auto", "zstd", "none"),
        "packChunks": ("true", "false"),
        "readOnly": ("true", "false"),
    },
    "sqlite": {
        "journalMode": ("wal", "delete", "truncate", "persist"),
        "busyTimeoutMs": None,
        "readOnly": ("true", "false"),
    },
    # importers.md §1.1, §2.1: read-only foreign homes
    "claude": {"readOnly": ("true",)},
    "codex": {"readOnly": ("true",), "includeArchived": ("true", "false")},
    "gemini": {"readOnly": ("true",)},  # importers.md §7.1
    "opencode": {"readOnly": ("true",)},  # importers.md §8.1
    "copilot": {"readOnly": ("true",)},  # importers.md §9.1
    "qwen": {"readOnly": ("true",), "includeArchived": ("true", "false")},  # importers.md §10.1
}
_HOME_DEFAULTS = {
    "claude": ("CLAUDE_CONFIG_DIR", "~/.claude"),
    "codex": ("CODEX_HOME", "~/.codex"),
    "gemini": ("GEMINI_CLI_HOME", "~/.gemini"),
    "opencode": ("XDG_DATA_HOME", "~/.local/share/opencode"),
    "copilot": ("COPILOT_HOME", "~/.copilot"),
    "qwen": ("QWEN_RUNTIME_DIR", "~/.qwen"),
}
# The directory an env variable names when it is not the home itself: Gemini CLI takes
# $GEMINI_CLI_HOME for the user's home (its own is .gemini in it); XDG_DATA_HOME is the parent of
# OpenCode's data.
_ENV_SUBDIR = {"gemini": ".gemini", "opencode": "opencode"}
assert tuple(_OPTIONS) == PATH_SCHEMES and tuple(_HOME_DEFAULTS) == HOME_SCHEMES


def _importer_home(scheme: str, location: str) -> str:
    """importers.md §1.1: empty means the agent's env variable or default; ``~`` is $HOME."""
    if not location:
        env, default = _HOME_DEFAULTS[scheme]
        value = os.environ.get(env)
        if value and scheme in _ENV_SUBDIR:
            value = os.path.join(value, _ENV_SUBDIR[scheme])
        location = value or default
    if location == "~" or location.startswith("~/"):
        home = os.environ.get("HOME", "")
        if not home:
            raise _invalid(f"{scheme} URI uses ~ but HOME is not set")
        location = home + location[1:]
    return location


class MountSpec(NamedTuple):  # not a dataclass: the command line parses URIs as it starts
    scheme: str
    location: str
    options: dict[str, str]

    @property
    def read_only(self) -> bool:
        return self.options.get("readOnly") == "true"


def _invalid(detail: str) -> QueryError:
    return QueryError(errors.INVALID_CONFIG, f"session-query: {detail}")


def _decode_location(text: str) -> str:
    if re.search(r"%(?![0-9A-Fa-f]{2})", text):
        raise _invalid("persistence URI has an invalid percent escape")
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeError:
        raise _invalid(
            "persistence URI location is not valid UTF-8 after percent-decoding"
        ) from None


def parse_uri(uri: Any) -> MountSpec:
    if not isinstance(uri, str):
        raise _invalid("persistence URI must be a string")
    if uri.startswith(("postgres://", "postgresql://")):  # libpq URIs (postgres.md §1.1)
        from ..postgres.conninfo import parse_postgres_uri

        mount = parse_postgres_uri(uri)
        return MountSpec("postgres", mount.redacted, {"readOnly": str(mount.read_only).lower()})
    scheme, sep, rest = uri.partition(":")
    if not sep or scheme not in _OPTIONS:
        raise _invalid(f'unknown persistence URI scheme in "{uri}"')
    location_text, _, query = rest.partition("?")
    location = _decode_location(location_text)
    if scheme in _HOME_DEFAULTS:
        location = _importer_home(scheme, location)
    if not location:
        raise _invalid(f'persistence URI "{uri}" has no location')
    if "\0" in location:
        raise _invalid("persistence URI location must not contain NUL")
    if not (location.startswith("/") or (scheme == "sqlite" and location == ":memory:")):
        raise _invalid(f'persistence URI location must be an absolute path, got "{location}"')
    options: dict[str, str] = {}
    allowed = _OPTIONS[scheme]
    for pair in query.split("&") if query else []:
        key, eq, value = pair.partition("=")
        if key not in allowed:
            raise _invalid(f'unknown {scheme} URI option "{key}"')
        if key in options:
            raise _invalid(f'repeated {scheme} URI option "{key}"')
        values = allowed[key]
        if not eq or (values is not None and value not in values):
            raise _invalid(f'invalid value for {scheme} URI option "{key}"')
        if values is None and not (
            value.isdigit() and value.isascii() and int(value) <= 2147483647
        ):
            raise _invalid(f'invalid value for {scheme} URI option "{key}"')
        options[key] = value
    return MountSpec(scheme, location, options)


def display_uri(uri: object) -> str:
    """A configured persistence value as it may be shown: passwords redacted (postgres.md §1.3)."""
    if isinstance(uri, str) and uri.startswith(("postgres://", "postgresql://")):
        from ..postgres.conninfo import redact

        return redact(uri)
    if isinstance(uri, list):
        return "[" + ", ".join(display_uri(u) for u in uri) + "]"  # type: ignore[misc]
    return str(uri)


# What opens a URI of a scheme a host process registered (``register_scheme``).
Opener = Callable[[str], "PersistenceBackend"]
# Schemes beyond persistence.md §1's. Production never registers one: the test harness registers
# ``test:`` in the server processes it starts (tests/harness_server.py), the hook of §1.
_REGISTERED: dict[str, Opener] = {}


def register_scheme(scheme: str, opener: Opener) -> None:
    """Mount ``<scheme>:...`` URIs with ``opener(uri)``, before any other rule and without the
    URI checks of §1: for a test harness's backends. A scheme of §1 cannot be replaced."""
    if scheme in _OPTIONS or scheme in ("postgres", "postgresql"):
        raise ValueError(f"persistence URI scheme {scheme!r} is built in")
    _REGISTERED[scheme] = opener


def _registered(uri: Any) -> PersistenceBackend | None:
    if not _REGISTERED or not isinstance(uri, str):
        return None
    scheme, sep, _ = uri.partition(":")
    opener = _REGISTERED.get(scheme) if sep else None
    return None if opener is None else opener(uri)


def open_backend(uri: str) -> PersistenceBackend:
    """Parse and construct the backend; construction runs the mount-time checks."""
    backend = _registered(uri)
    if backend is not None:
        return backend
    spec = parse_uri(uri)
    try:
        if spec.scheme in _HOME_DEFAULTS:
            from .importers import open_importer

            return open_importer(spec.scheme, spec.location, dict(spec.options), uri)
        if spec.scheme == "postgres":
            from ..postgres import open_postgres

            return open_postgres(uri)
        if spec.scheme == "jsonl":
            from ..jsonl import JsonlBackend

            root = spec.location
            if os.path.lexists(root) and not os.path.isdir(root):
                raise OSError(f'jsonl root "{root}" is a file, not a directory')
            if os.path.lexists(root) and not os.access(root, os.R_OK | os.X_OK):
                raise OSError(f'jsonl root "{root}" cannot be read: permission denied')
            return JsonlBackend(
                root,
                compression=spec.options.get("compression", "auto"),
                pack_chunks=spec.options.get("packChunks", "true") == "true",
                read_only=spec.read_only,
                uri=uri,
            )
        from ..sqlite import SqliteBackend

        return SqliteBackend(
            spec.location,
            journal_mode=spec.options.get("journalMode", "wal"),
            busy_timeout_ms=int(spec.options.get("busyTimeoutMs", "5000")),
            read_only=spec.read_only,
            uri=uri,
        )
    except QueryError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to open is a persistence failure
        raise QueryError(
            errors.PERSISTENCE_FAILED,
            f"failed to mount persistence: {inner_message(exc)}",
            cause=inner_message(exc),
        ) from None
