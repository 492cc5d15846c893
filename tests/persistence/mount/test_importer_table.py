"""The importer schemes agree across the mount (importers.md §1.1, §4.2, §4.5): each parses with
its agent's default home, mounts read-only through the importer table, is polled for freshness,
and is one of auto's members once its home holds a history."""

from __future__ import annotations

import os

import pytest

from dsh_query_server.core.freshness import POLLED_SCHEMES
from dsh_query_server.persistence.mount.composite import auto_uris
from dsh_query_server.persistence.mount.importers import IMPORTERS
from dsh_query_server.persistence.mount.uri import open_backend, parse_uri
from tests.conftest import AGENT_HOMES

SCHEMES = ["claude", "codex", "gemini", "opencode", "copilot", "qwen"]
# What marks a history in each home (§1.1, §2.1, §7.1, §8.1, §9.1, §10.1).
HISTORY = {
    "claude": "projects",
    "codex": "sessions",
    "gemini": "tmp",
    "opencode": "storage/session",
    "copilot": "session-state",
    "qwen": "projects",
}


def test_the_table_names_the_six_importers():
    assert sorted(IMPORTERS) == sorted(SCHEMES)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_importer_scheme_mounts_read_only_and_is_polled(scheme, tmp_path):
    default = parse_uri(f"{scheme}:").location  # conftest points every agent's home under HOME
    assert default.startswith(os.environ["HOME"] + "/")
    backend = open_backend(f"{scheme}:{tmp_path / 'absent'}")  # an absent home lists nothing
    try:
        assert backend.writable is False and backend.list() == []
    finally:
        backend.close()
    assert scheme in POLLED_SCHEMES


@pytest.mark.parametrize("scheme", SCHEMES)
def test_auto_mounts_an_agents_home_once_it_holds_a_history(scheme, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in AGENT_HOMES:  # every home at its default place under HOME
        monkeypatch.delenv(variable)
    home = parse_uri(f"{scheme}:").location
    assert home.startswith(f"{tmp_path}/")
    assert not any(u.startswith(f"{scheme}:") for u in auto_uris("sqlite:/s.db", os.environ))
    os.makedirs(os.path.join(home, HISTORY[scheme]))
    assert f"{scheme}:{home}" in auto_uris("sqlite:/s.db", os.environ)
