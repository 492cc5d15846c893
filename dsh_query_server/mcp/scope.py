"""The workspace sources of tools.md §1.2: the working directory and roots from file: URIs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit


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
