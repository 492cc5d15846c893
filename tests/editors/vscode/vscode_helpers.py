"""The VS Code extension's build helpers, shared by test_vscode_extension.py (layers 1 and 2)
and test_vscode_e2e.py (the code-server E2E test)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
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


def run(
    cmd: list[str], *, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        cmd, cwd=EXT, env=env or node_env(), capture_output=True, text=True, timeout=timeout
    )
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


def build_vsix(*, fresh: bool = False) -> Path:
    """Build the .vsix once per test session (layer 2 asserts it; the E2E test installs it);
    ``fresh`` builds it again even when this session already did."""
    global _packaged
    if fresh or not _packaged or not VSIX.exists():
        ensure_node_modules()
        run(["npm", "run", "package"])
        _packaged = True
    return VSIX
