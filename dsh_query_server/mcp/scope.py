"""The workspace sources of tools.md §1.2: the server's configuration, the working directory, and
(from a client on an older protocol) roots from file: URIs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS


def working_directory() -> str:
    """``$PWD`` when it is absolute and names the same directory as ``os.getcwd()``."""
    cwd = os.getcwd()
    pwd = os.environ.get("PWD")
    if pwd and pwd.startswith("/"):
        try:
            if os.path.samefile(pwd, cwd):
                return pwd
        except OSError:
            pass
    return cwd


def roots_from_uris(uris: Sequence[str]) -> list[str]:
    """Only ``file:`` URIs with an empty or ``localhost`` authority count; their paths are
    percent-decoded as UTF-8."""
    out: list[str] = []
    for uri in uris:
        try:
            parts = urlsplit(uri)
        except ValueError:
            continue
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            continue
        try:
            path = unquote(parts.path, encoding="utf-8", errors="strict")
        except UnicodeDecodeError:
            continue
        if path.startswith("/"):
            out.append(path)
    return out


# Where the workspace of a call came from (tools.md §1.2), as the answers name it.
FROM_CONFIG = "--workspace"
FROM_ROOTS = "the client's roots"
FROM_START = "the directory the server started in"


def roots_apply(configured: bool, protocol_version: str, declared: bool) -> bool:
    """Whether a call asks the client for its roots (§1.2): never when the server's
    configuration names the workspace, never on 2026-07-28 or later (roots are deprecated there,
    SEP-2577: a server takes directories from its configuration), and only from a client that
    declared the capability."""
    return not configured and declared and protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
