"""The VS Code extension (editor.md), layers 1 and 2, driven from pytest so `make test` has one runner:

1. `npm test`: unit tests of the tree/data/URI/render/filter logic under `node --test` with a stub of
   the `vscode` module, plus the data layer against this repository's server over stdio;
2. `npm run check` (tsc --noEmit and the esbuild bundle) and `npm run package` (vsce) succeed.

`npm ci` runs only when node_modules is missing or was installed from another package-lock.json.
The Node toolchain is the pinned Node 24 of the E2E cache when it is there (see mk/vscode.mk),
otherwise the machine's `node`/`npm`. The build helpers are in vscode_helpers.py (shared with test_vscode_e2e.py).
"""

from __future__ import annotations

import re
import sys
import zipfile

import pytest

from tests.editors.vscode.vscode_helpers import (
    EXT,
    ROOT,
    VSIX,
    build_vsix,
    ensure_node_modules,
    node_env,
    run,
)


@pytest.fixture(scope="module")
def node_modules() -> None:
    ensure_node_modules()


def test_typecheck_and_bundle(node_modules: None) -> None:
    """tsc --noEmit over src/ and test/, then the esbuild bundle."""
    bundle = EXT / "dist" / "extension.js"
    bundle.unlink(missing_ok=True)
    run(["npm", "run", "check"])
    text = bundle.read_text()
    assert 'require("vscode")' in text, "vscode stays external"


def test_unit_tests(node_modules: None) -> None:
    """node --test: every test passes, none is skipped (the server contract tests get a Python)."""
    result = run(["npm", "test"], env=node_env(DSH_QUERY_PYTHON=sys.executable), timeout=300)
    counts = {
        k: int(v)
        for k, v in re.findall(
            r"^(?:#|ℹ) (tests|pass|fail|skipped|cancelled) (\d+)$", result.stdout, re.M
        )
    }
    assert counts.get("tests", 0) >= 40, result.stdout[-3000:]
    assert counts.get("fail") == 0 and counts.get("cancelled", 0) == 0, result.stdout[-3000:]
    assert counts.get("skipped") == 0, "the server contract tests must run"
    assert counts["pass"] == counts["tests"]


def test_package_vsix(node_modules: None) -> None:
    """vsce packages the bundle, manifest, README, LICENSE and icons, and nothing else."""
    VSIX.unlink(missing_ok=True)
    vsix = build_vsix(fresh=True)
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
    assert "extension/dist/extension.js" in names
    assert "extension/dist/session_view.js" in names  # the session view's page (views.md §3)
    assert "extension/dist/usage_view.js" in names  # the Usage page (usage.md §5)
    assert "extension/package.json" in names
    assert "extension/media/session-query.svg" in names
    assert any(n.lower() == "extension/readme.md" for n in names)
    assert any(n.lower().startswith("extension/license") for n in names)
    unexpected = [
        n
        for n in names
        if n.startswith(("extension/src/", "extension/node_modules/", "extension/test/"))
    ]
    assert not unexpected, unexpected
    assert vsix.stat().st_size < 2_000_000


def test_the_packaged_session_page_is_a_fresh_build(node_modules: None, tmp_path) -> None:
    """The session page bundle the Python package ships (dsh-query export --html, committed so
    that pip installs need no node) is byte for byte what the extension's build writes now."""
    fresh = tmp_path / "session_view.js"
    run(["node", "scripts/build.mjs", f"--view-out={fresh}"])
    shipped = ROOT / "dsh_query_server" / "assets" / "session_view.js"
    assert fresh.read_bytes() == shipped.read_bytes(), (
        "dsh_query_server/assets/session_view.js is stale: run `npm run build` in vscode-extension"
    )
