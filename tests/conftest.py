"""Shared pytest configuration.

Test runs are hermetic: servers started by tests keep their default store and search index in a
private temporary directory, never in the user's ~/.local/state or ~/.cache, and never read a real
home: the default persistence is ``auto`` (importers.md §4.2), which mounts whatever dsh, Claude
Code and Codex histories lie under HOME, DSH_HOME, CLAUDE_CONFIG_DIR and CODEX_HOME, so each points
into the temporary directory too (the machine that runs the tests may have histories of its own).
This runs at import, before any test module copies os.environ for a server it starts."""

from __future__ import annotations

import os
import tempfile

# The real PostgreSQL server for the postgres: tests: one per run, shared by their modules.
pytest_plugins = ["tests.pg_server"]

_home = tempfile.mkdtemp(prefix="dsh-query-tests-")
# Tool caches (code-server and Node for the editor tests, npm's) stay where they were: they hold
# downloads, never histories.
_real_home = os.path.expanduser("~")
os.environ.setdefault("DSH_QUERY_E2E_CACHE", os.path.join(_real_home, ".cache", "dsh-query-e2e"))
os.environ.setdefault("npm_config_cache", os.path.join(_real_home, ".npm"))
os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")
# Empty homes: they exist (HOME) or not (the agents'), so `auto` finds the embedded store alone.
os.environ["HOME"] = os.path.join(_home, "home")
os.makedirs(os.environ["HOME"], mode=0o700)
os.environ["DSH_HOME"] = os.path.join(_home, "home", ".dsh")
os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(_home, "home", ".claude")
os.environ["CODEX_HOME"] = os.path.join(_home, "home", ".codex")
os.environ.pop("QWEN_RUNTIME_DIR", None)  # Qwen Code's home is then $HOME/.qwen: absent


def pytest_configure(config):
    # Selectable with `-m e2e` / deselectable with `-m "not e2e"`; runs by default.
    config.addinivalue_line(
        "markers", "e2e: end to end in a real VS Code (code-server + headless Chromium)"
    )
