"""Shared pytest configuration.

Test runs are hermetic: servers started by tests keep their default store and search index in a
private temporary directory, never in the user's ~/.local/state or ~/.cache. This runs at import,
before any test module copies os.environ for a server it starts."""

from __future__ import annotations

import os
import tempfile

# The real PostgreSQL server for the postgres: tests: one per run, shared by their modules.
pytest_plugins = ["tests.pg_server"]

_home = tempfile.mkdtemp(prefix="dsh-query-tests-")
os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")


def pytest_configure(config):
    # Selectable with `-m e2e` / deselectable with `-m "not e2e"`; runs by default.
    config.addinivalue_line("markers", "e2e: end to end in a real VS Code (code-server + headless Chromium)")
