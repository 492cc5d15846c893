"""Sub-agents nested under their parent in the sessions view (protocol.md §6 [ours], issue 24).

In process, on random corpora (hypothesis): sub-agents whose parent is in the corpus sit under
it, every other session at the top (or in its group), each session shows exactly once however
parents loop or dangle, and every node's parent round-trips through treeParent. Over the wire,
on the Claude Code worked example (importers.md §1.5) with a compaction helper beside its
sub-agent: both sit under the session they serve, the helper marked as one."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import CancelToken
from dsh_query_server.core.runtime import Runtime
from dsh_query_server.server import tree
from dsh_query_server.server.tree.nesting import forest
from tests.builders import header_value
from tests.import_helpers import COMPACT_AGENT, claude_home_with_a_compaction_helper
from tests.tree_helpers import call, children, client_fixture, kids, parent, runtime_over, sid

pytestmark = pytest.mark.wire

client = client_fixture  # the shared server fixture, under the name the tests take


@st.composite
def corpora(draw: st.DrawFn) -> list[dict]:
    """Up to 12 sessions whose parents may be anyone (themselves, a later session, a loop) or
    absent from the corpus; some are sub-agents, some compaction helpers, some forks."""
    n = draw(st.integers(min_value=0, max_value=12))
    headers = []
    for i in range(n):
        parent_id = draw(st.one_of(st.none(), st.integers(0, n), st.just("gone")))
        kind = draw(st.sampled_from(["plain", "subagent", "subagent", "compaction", "fork"]))
        source = {"agent": "claude-code", "path": f"/p/{i}", "lineage": kind}
        headers.append(
            header_value(
                f"s{i}",
                draw(st.integers(0, 50)),
                parentSession=None if parent_id is None else f"s{parent_id}",
                origin="subagent" if kind in ("subagent", "compaction") else None,
                source=source if kind in ("compaction", "fork") else None,
                cwd=draw(st.sampled_from([None, "/a", "/b"])),
            )
        )
    return headers


def expected_parent(by_id: dict[str, dict], session_id: str) -> str | None:
    """Where a session should sit: under its parent when it is a sub-agent whose parent is in
    the corpus, unless following those links from it comes back to it (a loop)."""

    def up(s: str) -> str | None:
        h = by_id[s]
        p = h.get("parentSession")
        return p if h.get("origin") == "subagent" and p in by_id and p != s else None

    seen, walk = {session_id}, up(session_id)
    while walk is not None:
        if walk in seen:
            return None if walk == session_id else up(session_id)
        seen.add(walk)
        walk = up(walk)
    return up(session_id)


def session_walk(runtime: Runtime, args: dict | None) -> dict[str, str | None]:
    """Every expandable session node of the (grouped) tree: {session id: the session id it is
    nested under, or None}, checking that each shows once and that treeParent round-trips."""
    placed: dict[str, str | None] = {}
    seen: set[str] = set()
    queue: list[tuple[str | None, str | None]] = [(None, None)]  # (node id, its session)
    while queue:
        node_id, owner = queue.pop(0)
        nodes = kids(runtime, node_id, args if node_id is None else None)
        assert len(nodes) <= tree.MAX_CHILDREN
        for node in nodes:
            assert node.id not in seen
            seen.add(node.id)
            assert parent(runtime, node.id) == node_id, node
            session = str(node.contextValue).startswith("session.")
            if session and node.collapsible != "none":
                assert sid(node) not in placed, f"{sid(node)} shown twice"
                placed[sid(node)] = owner
                queue.append((node.id, sid(node)))
            elif node.collapsible != "none" and node.contextValue != "group.events":
                queue.append((node.id, owner))  # groups, "more" pages, the Lineage links
    return placed


LOOP = [
    header_value("a", 1, parentSession="b", origin="subagent"),
    header_value("b", 2, parentSession="a", origin="subagent"),
    header_value("c", 3, parentSession="a", origin="subagent"),
    header_value("d", 4, parentSession="c", origin="subagent", cwd="/elsewhere"),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from([None, {"groupBy": "agent"}, {"groupBy": "workspace"}]))
@example(LOOP, None)
@example(LOOP, {"groupBy": "workspace"})
def test_sub_agents_nest_under_their_parent_and_every_session_shows_once(headers, args):
    by_id = {h["id"]: h for h in headers}
    with runtime_over(headers) as (runtime, _):
        placed = session_walk(runtime, args)
    assert placed == {s: expected_parent(by_id, s) for s in by_id}


@settings(max_examples=60, deadline=None)
@given(corpora())
def test_the_forest_partitions_the_corpus(headers):
    with runtime_over(headers) as (runtime, _):
        records = runtime.service.corpus(CancelToken())
    shaped = forest(records)
    nested = [r for kids_ in shaped.children.values() for r in kids_]
    assert sorted(r.header.id for r in shaped.roots + nested) == sorted(h["id"] for h in headers)
    for session_id, parent_id in shaped.parent.items():
        assert any(r.header.id == session_id for r in shaped.children[parent_id])
    # every nested session reaches a root by its parents
    for session_id in shaped.parent:
        walk, steps = session_id, 0
        while walk in shaped.parent:
            walk, steps = shaped.parent[walk], steps + 1
            assert steps <= len(headers)


def test_nested_sessions_page_with_more_nodes():
    headers = [header_value("p", 10_000)] + [
        header_value(f"c{i:03}", i, parentSession="p", origin="subagent") for i in range(250)
    ]
    with runtime_over(headers) as (runtime, _):
        [top] = kids(runtime, None)
        level = kids(runtime, top.id)
        assert len(level) == tree.MAX_CHILDREN and level[-1].contextValue == "more"
        assert [n.label for n in level[:2]] == ["Events", "Lineage"]
        shown = [sid(n) for n in level[2:-1]]
        assert shown == [f"c{i:03}" for i in range(len(shown))]  # oldest first
        assert level[-1].description == f"{250 - len(shown)} more sub-agents"
        rest = kids(runtime, level[-1].id)
        assert [sid(n) for n in rest] == [f"c{i:03}" for i in range(len(shown), 250)]
        assert parent(runtime, rest[0].id) == level[-1].id
        assert parent(runtime, level[-1].id) == top.id


# -- over the wire: a Claude Code session with its sub-agent and its compaction helper ----------


async def test_a_claude_sessions_sub_agent_and_compaction_helper_sit_under_it(client, tmp_path):
    home = claude_home_with_a_compaction_helper(tmp_path)
    await call(client, "sessionPersistence/mount", {"uri": f"claude:{home}"})
    [session] = await children(client, "sessions")
    assert session["label"] == "File cleanup"
    day = "(Jan 1|2026-01-01)"  # the UTC day, without its year within the current year
    assert re.fullmatch(f"claude-code · {day} · persisted", session["description"])
    nested = (await children(client, "sessions", session["id"]))[2:]
    assert [(n["resource"]["sessionId"], n["label"]) for n in nested] == [
        ("claude-demo/agent-ab12", "Rename b.py to c.py"),
        (f"claude-demo/agent-{COMPACT_AGENT}", "Compaction helper"),
    ]
    sub, helper = nested
    assert re.fullmatch(f"sub-agent · claude-code · {day} · persisted", sub["description"])
    assert "agent: general-purpose" in sub["tooltip"].splitlines()
    assert sub["icon"] == "sparkle"
    assert re.fullmatch(
        f"compaction helper · claude-code · {day} · persisted", helper["description"]
    )
    assert helper["icon"] == "fold"
    assert helper["tooltip"].startswith("Compaction helper: ")
    # The lineage view names the helper the same way.
    lineage = await children(client, "lineage", args={"sessionId": "claude-demo"})
    below = await children(client, "lineage", lineage[-1]["id"])
    assert [n["description"].split(" · ")[0] for n in below] == ["sub-agent", "compaction helper"]
