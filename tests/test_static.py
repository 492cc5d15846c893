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
