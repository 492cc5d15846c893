"""The VS Code extension (editor.md), layers 1 and 2, driven from pytest so `make test` has one runner:

1. `npm test`: unit tests of the tree/data/URI/render/filter logic under `node --test` with a stub of
   the `vscode` module, plus the data layer against this repository's server over stdio;
2. `npm run check` (tsc --noEmit and the esbuild bundle) and `npm run package` (vsce) succeed.

`npm ci` runs only when node_modules is missing or was installed from another package-lock.json.
The Node toolchain is the pinned Node 24 of the E2E cache when it is there (see mk/vscode.mk),
otherwise the machine's `node`/`npm`. The helpers here are shared with test_vscode_e2e.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "vscode-extension"
VSIX = EXT / "dist" / "dsh-query.vsix"
CODE_SERVER_VERSION = "4.139.1"  # keep in step with mk/vscode.mk
NODE_VERSION = "24.21.0"
LOCK_STAMP = EXT / "node_modules" / ".dsh-lock-sha256"


def e2e_cache() -> Path:
    return Path(os.environ.get("DSH_QUERY_E2E_CACHE") or Path.home() / ".cache" / "dsh-query-e2e")


def code_server_dir() -> Path:
    return e2e_cache() / f"code-server-{CODE_SERVER_VERSION}"


def node24_bin() -> Path:
    return code_server_dir() / "node_modules" / "node" / "bin"


def node_env(**extra: str) -> dict[str, str]:
    """The environment for node/npm: the cached Node 24 first on PATH when it is installed."""
    env = dict(os.environ)
    if (node24_bin() / "node").exists():
        env["PATH"] = f"{node24_bin()}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("npm_config_update_notifier", "false")
    env.update(extra)
    return env


def run(cmd: list[str], *, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=EXT, env=env or node_env(), capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (
        f"{' '.join(cmd)} failed ({result.returncode})\n--- stdout\n{result.stdout[-6000:]}\n--- stderr\n{result.stderr[-6000:]}"
    )
    return result


def lock_digest() -> str:
    return hashlib.sha256((EXT / "package-lock.json").read_bytes()).hexdigest()


def ensure_node_modules() -> None:
    """`npm ci` unless node_modules was installed from this very package-lock.json."""
    if shutil.which("npm", path=node_env()["PATH"]) is None:
        pytest.fail("npm is not installed: run `make vscode-deps` (or `make test`)")
    if LOCK_STAMP.exists() and LOCK_STAMP.read_text().strip() == lock_digest():
        return
    run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], timeout=600)
    LOCK_STAMP.write_text(lock_digest() + "\n")


_packaged = False


def build_vsix() -> Path:
    """Build the .vsix once per test session (layer 2 asserts it; the E2E test installs it)."""
    global _packaged
    if not _packaged:
        ensure_node_modules()
        run(["npm", "run", "package"])
        _packaged = True
    return VSIX


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
    counts = {k: int(v) for k, v in re.findall(r"^(?:#|ℹ) (tests|pass|fail|skipped|cancelled) (\d+)$", result.stdout, re.M)}
    assert counts.get("tests", 0) >= 40, result.stdout[-3000:]
    assert counts.get("fail") == 0 and counts.get("cancelled", 0) == 0, result.stdout[-3000:]
    assert counts.get("skipped") == 0, "the server contract tests must run"
    assert counts["pass"] == counts["tests"]


def test_package_vsix(node_modules: None) -> None:
    """vsce packages the bundle, manifest, README, LICENSE and icons, and nothing else."""
    VSIX.unlink(missing_ok=True)
    global _packaged
    _packaged = False
    vsix = build_vsix()
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
    assert "extension/dist/extension.js" in names
    assert "extension/package.json" in names
    assert "extension/media/session-query.svg" in names
    assert any(n.lower() == "extension/readme.md" for n in names)
    assert any(n.lower().startswith("extension/license") for n in names)
    unexpected = [n for n in names if n.startswith(("extension/src/", "extension/node_modules/", "extension/test/"))]
    assert not unexpected, unexpected
    assert vsix.stat().st_size < 2_000_000
