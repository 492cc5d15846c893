"""The sessions view over a home of all seven agents, mounted by `auto` (issue 26): grouping by
agent gives one group per agent with its icon (what VS Code and Neovim draw), and each group's
sessions name that agent. Neovim's icon table draws every agent's icon, each agent with a glyph
of its own in both styles."""

from __future__ import annotations

import pathlib
import re

import pytest

from dsh_query_server.server.tree.agents import AGENT_ICONS, DSH
from tests.cli.test_cli_agents import AGENTS, seven_agent_env
from tests.search_helpers import ROOT, StdioServer

ICONS_LUA = pathlib.Path(ROOT) / "editor" / "nvim" / "lua" / "dsh_query" / "icons.lua"


@pytest.mark.wire
def test_grouping_by_agent_gives_each_of_the_seven_agents_its_group_and_icon(tmp_path):
    server = StdioServer([], seven_agent_env(tmp_path), str(tmp_path))  # persistence "auto"
    try:
        groups = server.call(
            "sessionQuery/treeChildren", {"view": "sessions", "args": {"groupBy": "agent"}}
        )["nodes"]
        assert {g["label"] for g in groups} == AGENTS
        for group in groups:
            if group["label"] != DSH:
                assert group["icon"] == AGENT_ICONS[group["label"]]
            sessions = server.call(
                "sessionQuery/treeChildren", {"view": "sessions", "nodeId": group["id"]}
            )["nodes"]
            assert sessions and all(
                s.get("agent", DSH) == group["label"] for s in sessions if "resource" in s
            )
    finally:
        server.close()


def lua_table(name: str) -> dict[str, str]:
    """``M.<name> = { ["codicon"] = "glyph", ... }`` of icons.lua (Lua strings with \\ escapes)."""
    body = re.search(rf"^M\.{name} = {{\n(.*?)^}}", ICONS_LUA.read_text(), re.M | re.S)
    assert body is not None, name
    pairs = re.findall(r'\["([^"]+)"\] = "((?:[^"\\]|\\.)*)"', body.group(1))
    return dict(pairs)


@pytest.mark.parametrize("style", ["unicode", "ascii"])
def test_neovim_draws_every_agent_icon_with_a_glyph_of_its_own(style):
    glyphs = lua_table(style)
    agents = {glyphs[icon] for icon in AGENT_ICONS.values()}
    assert len(agents) == len(AGENT_ICONS)  # no two agents look alike
    others = {g for icon, g in glyphs.items() if icon not in AGENT_ICONS.values()}
    assert not agents & others
