"""Static check: pyflakes finds no undefined names, unused imports or redefinitions anywhere in
the package, the benchmarks or the tests. (A module split once left a name behind that only a
rare path would have hit; the type of bug tests can miss and a static pass cannot.)"""

from __future__ import annotations

import pathlib

from pyflakes.api import checkRecursive
from pyflakes.reporter import Reporter

ROOT = pathlib.Path(__file__).resolve().parent.parent


class _Collect:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        if text.strip():
            self.lines.append(text.strip())


def test_pyflakes_is_clean():
    found = _Collect()
    paths = [str(ROOT / name) for name in ("dsh_query_server", "bench", "tests")]
    checkRecursive(paths, Reporter(found, found))
    assert found.lines == []


def test_the_extension_silences_no_lint_rule():
    # ESLint runs over the extension (npm run lint, make lint): a finding is fixed, not disabled.
    ext = ROOT / "vscode-extension"
    sources = [p for d in ("src", "test", "scripts") for p in sorted((ext / d).rglob("*.*s"))]
    assert sources
    silenced = [str(p.relative_to(ROOT)) for p in sources if "eslint-disable" in p.read_text()]
    assert silenced == []
