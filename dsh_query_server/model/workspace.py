"""The workspace of tools.md §1.2: path normalisation N(p) and header visibility. Shared by the
MCP tools and by export's ``workspaceRoots``. A rule over a header's ``cwd`` and nothing else, so
it lives with the model, where every layer that filters headers can import it."""

from __future__ import annotations

from collections.abc import Iterable


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

    def __init__(self, roots: Iterable[str], base: str, source: str = "") -> None:
        self.base = base
        self.source = source  # where the roots came from, for the answers that name it (MCP)
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(normalize(r, base) for r in roots))

    def visible(self, cwd: object) -> bool:
        if not isinstance(cwd, str) or not cwd:
            return False
        path = normalize(cwd, self.base)
        return any(r == "/" or path == r or path.startswith(r + "/") for r in self.roots)
