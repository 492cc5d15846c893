"""The structure check: layers, import circles and module size.

``python -m dsh_query_server.devtools.layers [PACKAGE_DIR]`` exits non-zero and lists every
offence:

- an import that runs up a layer (model -> session -> persistence -> query -> search -> export
  -> core -> server -> hub -> mcp -> sync -> cli; the base utilities are usable by every layer and
  import only each other; devtools sits above everything; client.py is in the server layer (it
  speaks the server's framing); schema/ is in the cli layer, the highest, so ``dsh-query schema``
  can run it);
- an import between two layers kept apart although their order would allow it (``APART``: mcp/
  and server/ are two front ends of the application core, so mcp/ imports core/, never server/);
- an import circle between modules (imports under ``if TYPE_CHECKING:`` count too: a circle
  kept only for the type checker still ties the modules together);
- a module over 600 lines: a prompt to split it by responsibility, not a size to trim it to;
- code outside persistence/ that names a backend's optional read paths or calls a backend read
  (``BACKEND_READS``): every read goes through the mount's door (persistence/reads.py). Found
  like ``grep``, line by line, comments included; this module, which spells them, is exempt.

Imports are read with ``ast``, nothing is imported. Only imports of the package itself count.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

LAYERS = (
    "model",
    "session",
    "persistence",
    "query",
    "search",
    "export",
    "core",
    "server",
    "hub",
    "mcp",
    "sync",
    "cli",
)
BASE = frozenset(
    {
        "cancel",
        "progress",
        "config",
        "errors",
        "values",
        "jsoncodec",
        "files",
        "resolve",
        "rundir",
        "__init__",
    }
)
TOP = frozenset({"devtools"})
# (importer, imported): layers that must not import each other although LAYERS would allow it.
APART = frozenset({("mcp", "server")})
# Top-level modules that belong to a layer although they are not in its folder.
PLACED = {"client": "server", "__main__": "cli", "schema": "cli"}
# Past this a module almost always holds more than one responsibility: split it along them (a
# module trimmed to fit the number is the wrong answer).
MAX_LINES = 600
# The one room that may look at a backend's optional read paths and call its reads; everyone else
# reads through the mount's door (persistence/reads.py).
DOOR = "persistence"
_SELF = ".devtools.layers"  # this module spells the reads it looks for
BACKEND_READS = re.compile(
    r"capabilities\.|\.backend\.(?:inspect|list)"
    r"|\b(?:inspect_window|inspect_outline|list_one|list_revisions|inspect_many|read_raw)\b"
)


@dataclass(frozen=True)
class Rules:
    layers: tuple[str, ...] = LAYERS
    base: frozenset[str] = BASE
    top: frozenset[str] = TOP
    placed: dict[str, str] = field(default_factory=lambda: dict(PLACED))
    max_lines: int = MAX_LINES
    apart: frozenset[tuple[str, str]] = APART
    door: str = DOOR
    backend_reads: re.Pattern[str] = BACKEND_READS

    def rank(self, module: str) -> int:
        """-1 for base, len(layers) for top; a module's first name under the package decides."""
        parts = module.split(".")
        head = parts[1] if len(parts) > 1 else "__init__"
        head = self.placed.get(head, head)
        if head in self.base:
            return -1
        if head in self.top:
            return len(self.layers)
        if head in self.layers:
            return self.layers.index(head)
        raise KeyError(head)

    def layer_name(self, rank: int) -> str:
        return "base" if rank < 0 else "top" if rank >= len(self.layers) else self.layers[rank]


@dataclass(frozen=True)
class Import:
    source: str  # dotted module that imports
    target: str  # dotted module imported
    line: int


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file, for every .py under the package (packages by their __init__)."""
    root = package_dir.name
    out: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).with_suffix("")
        parts = [root, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """The package-internal imports of one module, resolved to known modules."""
    root = name.split(".")[0]
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # ``from pkg import sub`` imports the module pkg.sub when there is one.
            targets = [
                f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] == root and target != name:
                found.append(Import(name, target, node.lineno))
    return found


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def check(package_dir: Path, rules: Rules | None = None) -> list[str]:
    """Every offence, one line each; empty when the package keeps the rules."""
    rules = rules or Rules()
    known = modules(package_dir)
    top = package_dir.parent
    offences: list[str] = []
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        where = path.relative_to(top)
        text = path.read_text(encoding="utf-8").splitlines()
        lines = len(text)
        if name.split(".")[1:2] != [rules.door] and not name.endswith(_SELF):
            offences.extend(
                f"door: {where}:{number}: reads a backend outside {rules.door}/ ({found.group()})"
                for number, line in enumerate(text, 1)
                if (found := rules.backend_reads.search(line))
            )
        if lines > rules.max_lines:
            offences.append(
                f"size: {where} has {lines} lines (over {rules.max_lines}: split it by"
                " responsibility)"
            )
        try:
            rank = rules.rank(name)
        except KeyError as exc:
            offences.append(f"layer: {where} is in no layer ({exc.args[0]})")
            continue
        for imp in imports(name, path, known):
            edges[name].add(imp.target)
            try:
                target_rank = rules.rank(imp.target)
            except KeyError:
                continue  # reported for that module itself
            pair = (rules.layer_name(rank), rules.layer_name(target_rank))
            if target_rank > rank or pair in rules.apart:
                offences.append(
                    f"layer: {where}:{imp.line}: {pair[0]} imports {pair[1]} ({imp.target})"
                )
    offences = list(dict.fromkeys(offences))  # one line per import, however many names
    for cycle in _cycles(edges):
        offences.append("circle: " + " <-> ".join(cycle))
    return offences


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("usage: python -m dsh_query_server.devtools.layers [PACKAGE_DIR]", file=sys.stderr)
        return 2
    package_dir = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    offences = check(package_dir)
    for line in offences:
        print(line)
    if offences:
        print(f"{len(offences)} structure offence(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
