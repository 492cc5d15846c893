"""The workspace (tools.md §1.2): path normalisation, visibility, roots from file: URIs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
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


def normalize(path: str, base: str) -> str:
    """N(p): join to ``base``, collapse ``/`` runs, drop ``.``, apply ``..``, no trailing ``/``.
    Symbolic links are never resolved."""
    if not path.startswith("/"):
        path = base.rstrip("/") + "/" + path
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out:
                out.pop()
            continue
        out.append(segment)
    return "/" + "/".join(out)


class Workspace:
    """A fixed list of normalized roots; ``visible(cwd)`` is the header rule of §1.2."""

    def __init__(self, roots: Iterable[str], base: str) -> None:
        self.base = base
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(normalize(r, base) for r in roots))

    def visible(self, cwd: object) -> bool:
        if not isinstance(cwd, str) or not cwd:
            return False
        path = normalize(cwd, self.base)
        return any(r == "/" or path == r or path.startswith(r + "/") for r in self.roots)


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
