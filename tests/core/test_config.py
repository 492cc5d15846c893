"""The one configuration struct (dsh_query_server/config.py): its defaults are what the server
builds from no options, what the command line offers, and what the README's table says."""

from __future__ import annotations

import pathlib

import msgspec

from dsh_query_server.config import DEFAULTS, ServerConfig, default_index, readme_table
from dsh_query_server.core.config import build_config

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_configuration_table_is_generated_from_the_defaults():
    assert readme_table() in README.read_text(encoding="utf-8"), (
        "README.md's configuration table drifted from dsh_query_server/config.py; paste:\n"
        + readme_table()
    )


def test_no_options_build_the_struct_defaults():
    built = build_config({"persistence": None})
    expected = msgspec.structs.replace(
        DEFAULTS, search=msgspec.structs.replace(DEFAULTS.search, path=default_index(None))
    )
    assert msgspec.structs.replace(built, raw={}) == expected
    assert isinstance(built, ServerConfig)


def test_every_group_key_overrides_only_itself():
    built = build_config(
        {
            "persistence": None,
            "search": {"maxLimit": 7, "defaultLimit": 3},
            "checkpoint": {"intervalMs": 9},
        }
    )
    assert (built.search.max_limit, built.search.default_limit, built.search.snippet_chars) == (
        7,
        3,
        DEFAULTS.search.snippet_chars,
    )
    assert (built.checkpoint_interval_ms, built.checkpoint_mode) == (9, DEFAULTS.checkpoint_mode)


def test_command_line_defaults_come_from_the_struct():
    from dsh_query_server.cli import build_parser
    from dsh_query_server.cli.commands import cli_index

    parser = build_parser()
    assert parser.parse_args(["search", "needle"]).limit == DEFAULTS.search.default_limit
    for mode in ("auto", "manual"):
        assert parser.parse_args(["serve", "--checkpoint", mode]).checkpoint == mode
    # The command line's index is its own, never the one a server with the same store uses.
    uri = "sqlite:/tmp/store.db"
    assert cli_index(uri) != default_index(uri)
    assert cli_index(uri).endswith(default_index(uri).rsplit("index-", 1)[1])
