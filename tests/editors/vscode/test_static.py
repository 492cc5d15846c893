"""Static checks that the linters cannot make: the extension silences no ESLint rule. (Undefined
names, unused imports and redefinitions in the package, the benchmarks and the tests are ruff's F
rules, run by `make lint` inside `make test`.)"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_extension_silences_no_lint_rule():
    # ESLint runs over the extension (npm run lint, make lint): a finding is fixed, not disabled.
    ext = ROOT / "vscode-extension"
    sources = [p for d in ("src", "test", "scripts") for p in sorted((ext / d).rglob("*.*s"))]
    assert sources
    silenced = [str(p.relative_to(ROOT)) for p in sources if "eslint-disable" in p.read_text()]
    assert silenced == []
