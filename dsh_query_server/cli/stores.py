"""Wrong ``--persistence`` input says so, before a command reads anything.

A command that only reads has nothing to show from a store that is not there, so a location that
does not exist, or that is not the kind of store its scheme names (a file that is not a SQLite
database for ``sqlite:``, a file for ``jsonl:``, ``claude:`` or ``codex:``), is refused: exit 2,
the URI and the reason on stderr. A directory that holds no sessions but is next to one that does
(a dsh root one level too high, ``~/.claude/projects`` given for ``claude:``) gets a "did you
mean" line. A store that exists but holds nothing yet is fine: it lists no sessions.

These are the command line's checks; the server's own (persistence.md §1, §5.3) still run when it
mounts, and a store the server refuses is reported by the command that asked (commands.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ..errors import QueryError
from ..files import SQLITE_MAGIC

_SCAN = 200  # directory entries looked at per level when looking for sessions


class Refusal(NamedTuple):  # not a dataclass: every reading command loads this module
    uri: str
    reason: str
    suggestion: str | None = None

    def __str__(self) -> str:
        said = f"error: {self.uri}: {self.reason}"
        return said + (f"\n  did you mean {self.suggestion} ?" if self.suggestion else "")


def _entries(path: str) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            for n, entry in enumerate(it):
                if n >= _SCAN:
                    return
                yield entry
    except OSError:
        return


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# -- what each scheme's store looks like ---------------------------------------------------------


def _jsonl_holds_sessions(root: str) -> bool:
    """persistence.md §4.1: <root>/<project>/<session>/session.jsonl[.zstd] (looked for in the
    first entries of each level only: enough to tell a root from a directory next to one)."""
    for project in _entries(root):
        if not _is_dir(project):
            continue
        for session in _entries(project.path):
            if _is_dir(session) and any(
                os.path.isfile(os.path.join(session.path, name))
                for name in ("session.jsonl", "session.jsonl.zstd")
            ):
                return True
    return False


def _claude_home(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "projects"))  # importers.md §1.1


def _codex_home(path: str) -> bool:
    return any(os.path.isdir(os.path.join(path, d)) for d in ("sessions", "archived_sessions"))


def _ancestors(path: str, levels: int) -> Iterator[str]:
    for _ in range(levels):
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent
        yield path


def _home_near(path: str, is_home: Callable[[str], bool], child: str, levels: int) -> str | None:
    """A home next to ``path``: its ``child`` (``~`` given for ``~/.claude``) or an ancestor
    (a directory inside the home given for the home)."""
    inner = os.path.join(path, child)
    if is_home(inner):
        return inner
    return next((a for a in _ancestors(path, levels) if is_home(a)), None)


def _jsonl_near(root: str) -> str | None:
    """A dsh root next to ``root``: its ``sessions/`` (``~/.dsh`` given for ``~/.dsh/sessions``)
    or, for a project or session directory given, the root above it."""
    for candidate in (
        os.path.join(root, "sessions"),
        os.path.join(root, ".dsh", "sessions"),
        *_ancestors(root, 2),
    ):
        if os.path.isdir(candidate) and _jsonl_holds_sessions(candidate):
            return candidate
    return None


# -- the checks ------------------------------------------------------------------------------------


def _sqlite(uri: str, path: str) -> Refusal | None:
    if path == ":memory:":
        return None
    if not os.path.lexists(path):
        return Refusal(uri, "no such file (a command that only reads creates no store)")
    if os.path.isdir(path):
        inside = os.path.join(path, "sessions.db")
        hint = f"sqlite:{inside}" if os.path.isfile(inside) else None
        return Refusal(uri, "is a directory, not a SQLite database file", hint)
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except PermissionError:
        return Refusal(uri, "cannot be read: permission denied")
    except OSError as exc:
        return Refusal(uri, f"cannot be read: {exc.strerror or exc}")
    if head and head != SQLITE_MAGIC:  # an empty file is a database with nothing in it yet
        return Refusal(uri, "is not a SQLite database")
    return None


def _directory(uri: str, path: str, kind: str) -> Refusal | None:
    """The checks every directory-shaped store shares: it exists, it is a directory."""
    if not os.path.lexists(path):
        return Refusal(uri, f"no such directory (a {kind} is a directory)")
    if not os.path.isdir(path):
        hint = None
        try:
            with open(path, "rb") as f:
                if f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                    hint = f"sqlite:{path}"
        except OSError:
            pass
        return Refusal(uri, f"is a file, not a directory (a {kind} is a directory)", hint)
    if not os.access(path, os.R_OK | os.X_OK):
        return Refusal(uri, "cannot be read: permission denied")
    return None


def _jsonl(uri: str, root: str) -> Refusal | None:
    refused = _directory(uri, root, "dsh session root")
    if refused is not None or _jsonl_holds_sessions(root):
        return refused
    near = _jsonl_near(root)
    if near is None:
        return None
    return Refusal(uri, "holds no dsh sessions", f"jsonl:{near}")


def _home(uri: str, scheme: str, home: str) -> Refusal | None:
    if scheme == "claude":
        kind, is_home, child, marker = "Claude Code home", _claude_home, ".claude", "projects/"
    else:
        kind, is_home, child, marker = "Codex home", _codex_home, ".codex", "sessions/"
    refused = _directory(uri, home, kind)
    if refused is not None or is_home(home):
        return refused
    near = _home_near(home, is_home, child, 5)
    if near is None:
        return None
    return Refusal(uri, f"is not a {kind} (it has no {marker})", f"{scheme}:{near}")


def check(uri: str) -> Refusal | None:
    """Why a command that only reads cannot use ``uri``, or None when it can."""
    if uri in ("auto", "none"):
        return None
    from ..persistence.mount.uri import parse_uri

    try:
        spec = parse_uri(uri)
    except QueryError as exc:
        return Refusal(uri, exc.message.removeprefix("session-query: "))
    if spec.scheme == "sqlite":
        return _sqlite(uri, spec.location)
    if spec.scheme == "jsonl":
        return _jsonl(uri, spec.location)
    if spec.scheme in ("claude", "codex"):
        return _home(uri, spec.scheme, spec.location)
    return None  # postgres: the server connects and says what went wrong


def refuse_wrong(uris: list[str] | None) -> None:
    """Exit 2 with every refused URI on stderr, or return when all can be read."""
    from ..resolve import absolute_uri

    refused = [r for r in (check(absolute_uri(u)) for u in uris or []) if r is not None]
    if refused:
        sys.stderr.write("".join(f"{r}\n" for r in refused))
        sys.exit(2)


__all__ = ["Refusal", "check", "refuse_wrong"]
