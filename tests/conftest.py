"""Shared pytest configuration.

Test runs are hermetic: servers started by tests keep their default store and search index in a
private temporary directory, never in the user's ~/.local/state or ~/.cache, and never read a real
home: the default persistence is ``auto`` (importers.md §4.2), which mounts whatever agent
histories lie under HOME and each agent's variable (``AGENT_HOMES``), so each points into the
temporary directory too (the machine that runs the tests may have histories of its own).
Hubs (hub.md) keep their sockets in a private XDG_RUNTIME_DIR, and every hub a test started is
stopped after it. This runs at import, before any test module copies os.environ for a server it
starts.

Markers (``--strict-markers``): every test is exactly one of ``unit``, ``wire``, ``postgres`` or
``editor`` (``wire`` tests may need PostgreSQL too), set here so that nobody has to remember:

- ``editor``: the tests under tests/editors/ (code-server + Chromium, Neovim);
- ``postgres``: the tests that use the real PostgreSQL's fixtures (tests/pg_server.py);
- ``wire``: the modules or tests marked ``pytest.mark.wire`` because they start a server process
  (over stdio, or through the CLI, which starts one). A test that is none of these and starts a
  server process fails and says so (``_spawn_guard``): a forgotten mark cannot pass;
- ``unit``: every other test (in process).

``make check`` runs ``unit`` and ``wire`` minus ``slow`` with the ``check`` Hypothesis profile,
which caps every property test's examples (``CHECK_EXAMPLES``); ``make test`` runs everything
at the examples each test asks for."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.home_guard import HomeGuard

# The real PostgreSQL server for the postgres: tests: one per run, shared by their modules.
pytest_plugins = ["tests.pg_server"]

_home = tempfile.mkdtemp(prefix="dsh-query-tests-")
# Tool caches (code-server and Node for the editor tests, npm's) stay in the real home's
# ~/.cache/dsh-query-* (as in the Makefile): they hold downloads, never histories. Nothing else in
# the real home is written (home_guard.py checks at the end of the session).
_real_home = os.path.expanduser("~")
_guard = HomeGuard(Path(_real_home))
os.environ.setdefault("DSH_QUERY_E2E_CACHE", os.path.join(_real_home, ".cache", "dsh-query-e2e"))
os.environ.setdefault("npm_config_cache", os.path.join(_real_home, ".cache", "dsh-query-npm"))
os.environ["npm_config_update_notifier"] = "false"
os.environ["XDG_STATE_HOME"] = os.path.join(_home, "state")
os.environ["XDG_CACHE_HOME"] = os.path.join(_home, "cache")
os.environ["XDG_CONFIG_HOME"] = os.path.join(_home, "config")  # code-server's, Chromium's, nvim's
os.environ["XDG_DATA_HOME"] = os.path.join(_home, "data")
# Hub sockets, locks and TCP tokens (hub.md §1): a private runtime directory, never the user's.
os.environ["XDG_RUNTIME_DIR"] = os.path.join(_home, "run")
os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700)
# Empty homes: they exist (HOME) or not (the agents'), so `auto` finds the embedded store alone.
os.environ["HOME"] = os.path.join(_home, "home")
os.makedirs(os.environ["HOME"], mode=0o700)
# The variables that move an agent's home (importers.md §4.2), each to its default under HOME.
AGENT_HOMES = {
    "DSH_HOME": ".dsh",
    "CLAUDE_CONFIG_DIR": ".claude",
    "CODEX_HOME": ".codex",
    "GEMINI_CLI_HOME": "",  # Gemini CLI's stand-in for HOME: its home is .gemini in it
    "XDG_DATA_HOME": os.path.join(".local", "share"),  # OpenCode's is opencode/ in it
    "COPILOT_HOME": ".copilot",
    "QWEN_RUNTIME_DIR": ".qwen",
}
for _variable, _default in AGENT_HOMES.items():
    os.environ[_variable] = os.path.join(os.environ["HOME"], _default)


MARKERS = {
    "unit": "in process: no server process, no database server, no editor (set by conftest.py)",
    "wire": "starts a server process over real stdio, or the CLI, which starts one",
    "postgres": "needs the real PostgreSQL of tests/pg_server.py (set by conftest.py)",
    "editor": "drives a real editor: code-server + Chromium, or Neovim (set by conftest.py)",
    "slow": "a long test that `make check` leaves to `make test`",
    # Selectable with `-m e2e` / deselectable with `-m "not e2e"`; runs by default.
    "e2e": "end to end in a real VS Code (code-server + headless Chromium)",
    # Needs the Inspector that mk/inspector.mk installs: `make test` runs it, `make check` not.
    "inspector": "drives dsh-query mcp with the MCP Inspector CLI (Node, from the test cache)",
}
KINDS = ("wire", "postgres", "editor")
POSTGRES_FIXTURES = frozenset({"pg_server", "pg_database"})
TESTS = Path(__file__).resolve().parent
# The `check` profile's cap on a property test's examples (make check: feedback in seconds).
CHECK_EXAMPLES = 10
settings.register_profile("check", max_examples=CHECK_EXAMPLES)


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    capped = settings.get_current_profile_name() == "check"
    for item in items:
        if item.path.is_relative_to(TESTS / "editors"):
            item.add_marker(pytest.mark.editor)
        if POSTGRES_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)
        if not any(item.get_closest_marker(kind) for kind in KINDS):
            item.add_marker(pytest.mark.unit)
        if capped:
            _cap_examples(item)


def _cap_examples(item: pytest.Item) -> None:
    """A property test's own ``@settings(max_examples=...)`` wins over any profile, so the check
    profile caps the settings Hypothesis reads when the test runs."""
    test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if own is not None and own.max_examples > CHECK_EXAMPLES:
        test._hypothesis_internal_use_settings = settings(own, max_examples=CHECK_EXAMPLES)  # type: ignore[union-attr]


# -- the guard on the wire mark ------------------------------------------------------------------

_current: list[pytest.Item] = []
_SERVER_MODULES = ("dsh_query_server", "tests.harness_server", "tests.harness_hub")
_NOT_SERVERS = ("dsh_query_server.devtools", "dsh_query_server.schema")


def _starts_a_server(args: Any) -> bool:
    """``python -m dsh_query_server[.mcp|.cli]`` or the test launcher, or ``dsh-query``."""
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    words = [os.fsdecode(a) for a in argv]
    if words and os.path.basename(words[0]) == "dsh-query":
        return True
    for flag, module in zip(words, words[1:], strict=False):
        if flag == "-m" and module.startswith(_SERVER_MODULES):
            return not module.startswith(_NOT_SERVERS)
    return False


class _GuardedPopen(subprocess.Popen):  # type: ignore[type-arg]
    def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
        item = _current[-1] if _current else None
        if item is not None and not any(item.get_closest_marker(k) for k in KINDS):
            if _starts_a_server(args):
                item.stash[_SPAWNED] = True
                raise RuntimeError(
                    f"{item.nodeid} starts a server process: mark it pytest.mark.wire"
                )
        super().__init__(args, *rest, **kwargs)


_SPAWNED = pytest.StashKey[bool]()
subprocess.Popen = _GuardedPopen  # type: ignore[misc]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _current.append(item)
    try:
        return (yield)
    finally:
        _current.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if item.stash.get(_SPAWNED, False) and report.when == "call" and report.passed:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} starts a server process: mark it pytest.mark.wire"
    return report


# -- hubs ------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _stop_the_hubs_a_test_started() -> Iterator[None]:
    """Every hub a test started (through the CLI, an MCP server or directly) is stopped after
    it, unless a longer-lived client holds its directory (hub_helpers.using_hubs)."""
    yield
    from tests.hub.hub_helpers import stop_idle_dirs

    stop_idle_dirs(os.environ["XDG_RUNTIME_DIR"])


# -- the real home, untouched -------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Before the summary: every hub stopped; a session that wrote into the real home fails
    (home_guard.py)."""
    from tests.hub.hub_helpers import cleanup_made, stop_hubs

    cleanup_made()
    stop_hubs(os.environ["XDG_RUNTIME_DIR"])
    if _guard.report() is not None and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    message = _guard.report()
    if message is not None:
        terminalreporter.write_line(f"ERROR: {message}", red=True, bold=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_home, ignore_errors=True)
