"""What a command against a warm hub loads (cli/__init__.py): ``sessions``, ``read`` and
``search`` with ``--json`` run whole in a real process against a real hub, and none of them loads
the server, the query or search machinery, a backend, msgspec, rich or dataclasses. Not timed: a
module that comes back on this path is caught here, whatever the machine's speed."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from dsh_query_server.cli import MODULES, build_parser, subcommand
from dsh_query_server.model.event import make_event
from dsh_query_server.persistence.sqlite import SqliteBackend
from tests.builders import EPOCH_MS, A, U, header

pytestmark = [pytest.mark.wire, pytest.mark.slow]

# What the thin client must not load; each costs milliseconds of every command's start.
HEAVY = (
    "asyncio",
    "dataclasses",
    "decimal",
    "dsh_query_server.core",
    "dsh_query_server.persistence.sqlite",
    "dsh_query_server.query",
    "dsh_query_server.search",
    "dsh_query_server.server.app",
    "lsprotocol",
    "msgspec",
    "pygls",
    "rich",
    "sqlite3",
)

# Runs the command line's entry as the console script does, then names what it loaded.
RUN = """
import json, sys
from dsh_query_server.cli import main
main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def run(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stderr.rsplit("MODULES ", 1)[1]
    return done.stdout, set(json.loads(loaded))


def heavy_in(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = str(tmp_path / "sessions.db")
    backend = SqliteBackend(path)
    backend.create(header("s1", EPOCH_MS, cwd="/w", delegationDepth=0))
    title = {"title": "Lighthouse", "messageSeqs": [0], "source": {"kind": "user"}}
    backend.append(
        "s1",
        [U(0, "the lighthouse keeper"), A(1), make_event("session/title", 2, EPOCH_MS, title)],
    )
    backend.close()
    return f"sqlite:{path}?readOnly=true"


def test_commands_against_a_warm_hub_load_no_server(store) -> None:
    flags = ["--persistence", store]
    run("sessions", "--json", *flags)  # starts the hub
    listed, loaded = run("sessions", "--json", *flags)
    assert [r.get("title") for r in json.loads(listed)] == ["Lighthouse"]
    assert heavy_in(loaded) == []
    read, loaded = run("read", "s1", "0", "--json", *flags)
    assert "lighthouse keeper" in read
    assert heavy_in(loaded) == []
    found, loaded = run("search", "lighthouse keeper", "--json", *flags)
    assert [h["header"]["id"] for h in json.loads(found)["items"]] == ["s1"]
    assert heavy_in(loaded) == []


def test_a_named_subcommand_parses_as_with_every_parser() -> None:
    """The table names exactly what each module registers, and the parser of the named
    subcommand's module alone gives the same parse as the whole one."""
    for module, commands in MODULES.items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"dsh_query_server.cli.{module}").register(
            sub, argparse.ArgumentParser(add_help=False)
        )
        assert tuple(sub.choices) == commands, module
    everything = build_parser()
    for argv in (
        ["sessions", "--json", "--limit", "3"],
        ["--no-hub", "read", "s1", "4", "--before", "2"],
        ["search", "two words", "--page", "2"],
        ["hub", "status"],
        ["usage", "--json"],
    ):
        named = subcommand(argv)
        assert named is not None
        assert vars(build_parser(named).parse_args(argv)) == vars(everything.parse_args(argv))
    assert subcommand(["--help"]) is None and subcommand(["--version"]) is None
    assert subcommand(["nonsense"]) is None and subcommand([]) is None
