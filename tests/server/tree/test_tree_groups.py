"""The sessions view's agents and groupings (issue 14, importers.md §0.8 ``source``).

Sessions are dsh sessions whose headers carry a ``source`` key (headers admit unknown keys), so
these tests need no importer. Over the wire: the agent shows per session and both groupings
partition the corpus. In process, on random corpora (hypothesis): every node of every grouping
round-trips through treeParent, groups partition the sessions exactly, and the groups and their
sessions page at the same bounds as the ungrouped corpus."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.core.runtime import Runtime
from dsh_query_server.errors import QueryError
from dsh_query_server.server import tree
from dsh_query_server.server.tree.nodes import TreeNode
from tests.builders import U, header_value
from tests.tree_helpers import (
    call,
    children,
    client_fixture,
    kids,
    parent,
    runtime_over,
    sid,
    walk,
)

pytestmark = pytest.mark.wire

client = client_fixture  # the shared server fixture, under the name the tests take

CLAUDE = {
    "agent": "claude-code",
    "agentVersion": "2.1.38",
    "path": "/h/.claude/projects/p/c1.jsonl",
}
CODEX = {"agent": "codex", "path": "/h/.codex/sessions/x.jsonl", "lineage": "fork"}


# -- over the wire ---------------------------------------------------------------------------


async def test_agents_and_groupings_over_the_wire(client):
    corpus = [
        header_value("d1", 1000, cwd="/work/app"),
        header_value("c1", 2000, source=CLAUDE, cwd="/work/app"),
        header_value("x1", 3000, source=CODEX, cwd="/work/lib", parentSession="c1"),
        header_value("c2", 4000, source=CLAUDE),
        header_value("d2", 5000, cwd="/work/lib"),
    ]
    for h in corpus:
        await call(
            client,
            "sessionStore/create",
            {"header": h, "seed": [U(0, f"ask {h['id']}").to_value()]},
        )

    roots = await children(client, "sessions")
    assert [n["resource"]["sessionId"] for n in roots] == ["d2", "c2", "x1", "c1", "d1"]
    by_id = {n["resource"]["sessionId"]: n for n in roots}
    assert {sid: n["agent"] for sid, n in by_id.items()} == {
        "d1": "dsh",
        "d2": "dsh",
        "c1": "claude-code",
        "c2": "claude-code",
        "x1": "codex",
    }
    assert by_id["c1"]["icon"] == "sparkle" and by_id["x1"]["icon"] == "robot"
    assert by_id["d1"]["icon"] == "circle-filled"  # dsh sessions keep their state icons
    assert by_id["c1"]["description"] == "claude-code · 1970-01-01 · live"
    assert by_id["d1"]["description"] == "dsh · 1970-01-01 · live"  # every agent is named
    assert "source: claude-code 2.1.38" in by_id["c1"]["tooltip"].splitlines()
    assert f"transcript: {CLAUDE['path']}" in by_id["c1"]["tooltip"].splitlines()
    assert "source: codex (fork)" in by_id["x1"]["tooltip"].splitlines()
    assert "source: dsh" in by_id["d1"]["tooltip"].splitlines()

    agents = await children(client, "sessions", args={"groupBy": "agent"})
    assert [(g["label"], g["description"], g["icon"], g["contextValue"]) for g in agents] == [
        ("dsh", "2 sessions", "history", "corpusGroup.agent"),
        ("claude-code", "2 sessions", "sparkle", "corpusGroup.agent"),
        ("codex", "1 session", "robot", "corpusGroup.agent"),
    ]
    members = [
        [n["resource"]["sessionId"] for n in await children(client, "sessions", g["id"])]
        for g in agents
    ]
    assert members == [["d2", "d1"], ["c2", "c1"], ["x1"]]

    spaces = await children(client, "sessions", args={"groupBy": "workspace"})
    assert [(g["label"], g["description"]) for g in spaces] == [
        ("lib", "2 sessions · /work"),
        ("(no workspace)", "1 session"),
        ("app", "2 sessions · /work"),
    ]
    assert spaces[0]["tooltip"].splitlines()[0] == "/work/lib"

    # "none" is the ungrouped tree, with the ids it always had.
    assert await children(client, "sessions", args={"groupBy": "none"}) == roots
    # Grouped trees have their own ids, and every node's parent is the node it came from.
    for mode in ("agent", "workspace"):
        found, _ = await walk(client, "sessions", {"groupBy": mode})
        session_ids = {n["resource"]["sessionId"] for n in found.values() if "agent" in n}
        assert session_ids == {h["id"] for h in corpus}
        assert not set(found) & {n["id"] for n in roots}
    with pytest.raises(Exception, match="groupBy must be one of none, agent, workspace"):
        await children(client, "sessions", args={"groupBy": "model"})


# -- in process, on random corpora ------------------------------------------------------------


def grouped_walk(runtime: Runtime, mode: str, deep: bool) -> dict[str, list[TreeNode]]:
    """The sessions shown under each group (following "more" pages), checking the treeParent of
    every node reached; with ``deep`` each session's own subtree too. {group id: sessions}."""
    shown: dict[str, list[TreeNode]] = {}
    seen: set[str] = set()
    # (node id, the group whose sessions its children are: a group or one of its pages)
    queue: list[tuple[str | None, str | None]] = [(None, None)]
    while queue:
        node_id, members_of = queue.pop(0)
        nodes = kids(runtime, node_id, {"groupBy": mode} if node_id is None else None)
        assert len(nodes) <= tree.MAX_CHILDREN
        for node in nodes:
            assert node.id not in seen
            seen.add(node.id)
            assert parent(runtime, node.id) == node_id, node
            if node.contextValue == f"corpusGroup.{mode}":
                queue.append((node.id, node.id))
            elif node.contextValue == "more":
                queue.append((node.id, members_of))
            elif members_of is not None:
                assert str(node.contextValue).startswith("session.")
                shown.setdefault(members_of, []).append(node)
                if deep:
                    queue.append((node.id, None))
            elif node.collapsible != "none" and deep:
                queue.append((node.id, None))
    return shown


AGENTS = st.sampled_from(
    [None, CLAUDE, CODEX, {"agent": "aider", "path": "/x"}, {"path": "/no-agent"}]
)
CWDS = st.sampled_from([None, "/a", "/b", "/a/b", "/"])


@st.composite
def corpora(draw: st.DrawFn) -> list[dict]:
    n = draw(st.integers(min_value=0, max_value=14))
    headers = []
    for i in range(n):
        parent_id = draw(st.one_of(st.none(), st.integers(0, max(i - 1, 0)))) if i else None
        headers.append(
            header_value(
                f"s{i}",
                draw(st.integers(0, 50)),
                source=draw(AGENTS),
                cwd=draw(CWDS),
                parentSession=None if parent_id is None else f"s{parent_id}",
            )
        )
    return headers


def expected_value(h: dict, mode: str) -> str | None:
    if mode == "workspace":
        return h.get("cwd")
    source = h.get("source")
    if source is None:
        return "dsh"
    return source.get("agent", "unknown")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(["agent", "workspace"]))
def test_groupings_partition_the_corpus_and_every_parent_round_trips(headers, mode):
    with runtime_over(headers) as (runtime, _):
        ungrouped = [sid(n) for n in kids(runtime, None)]
        shown = grouped_walk(runtime, mode, deep=True)
        groups = kids(runtime, None, {"groupBy": mode})
    by_id = {h["id"]: h for h in headers}
    members = {g: [sid(n) for n in nodes] for g, nodes in shown.items()}
    # A partition: every session exactly once, in a group holding only its own value.
    assert sorted(s for m in members.values() for s in m) == sorted(by_id)
    for group in groups:
        values = {expected_value(by_id[s], mode) for s in members.get(group.id, [])}
        assert len(values) == 1  # no empty group is shown
        label = values.pop()
        if mode == "agent":
            assert group.label == label
        else:
            assert (
                str(group.tooltip).splitlines()[0] == label
                if label
                else group.label == "(no workspace)"
            )
        assert str(group.description).split(" · ")[0].split()[0] == str(len(members[group.id]))
    # Groups in order of their newest session, members in corpus order.
    firsts = [members[g.id][0] for g in groups]
    assert firsts == sorted(firsts, key=ungrouped.index)
    for m in members.values():
        assert m == sorted(m, key=ungrouped.index)


def test_groups_and_their_sessions_page_like_the_corpus():
    """205 workspaces (groups page) and 203 codex sessions (a group's sessions page)."""
    headers = [
        header_value(f"s{i:03}", i, cwd=f"/w/{i:03}", source=CODEX if i < 203 else None)
        for i in range(205)
    ]
    with runtime_over(headers) as (runtime, _):
        for mode, group_count in (("workspace", 205), ("agent", 2)):
            shown = grouped_walk(runtime, mode, deep=False)
            assert len(shown) == group_count
            assert sorted(sid(n) for nodes in shown.values() for n in nodes) == sorted(
                h["id"] for h in headers
            )
        roots = kids(runtime, None, {"groupBy": "workspace"})
        assert (
            len(roots) == 200
            and roots[-1].contextValue == "more"
            and roots[-1].description == "6 more groups"
        )
        codex = kids(runtime, None, {"groupBy": "agent"})[1]
        assert codex.label == "codex" and codex.description == "203 sessions"
        page = kids(runtime, codex.id)
        assert len(page) == 200 and page[-1].description == "4 more sessions"
        assert [sid(n) for n in kids(runtime, page[-1].id)] == [
            "s003",
            "s002",
            "s001",
            "s000",
        ]


def test_a_session_that_left_the_corpus_and_an_empty_group_are_roots():
    headers = [header_value("a", 1, source=CLAUDE), header_value("b", 2)]
    with runtime_over(headers) as (runtime, store):
        group = kids(runtime, None, {"groupBy": "agent"})[1]
        session = kids(runtime, group.id)[0]
        assert sid(session) == "a" and parent(runtime, session.id) == group.id
        store.sessions.pop("a")
        assert parent(runtime, session.id) is None
        assert parent(runtime, group.id) is None and kids(runtime, group.id) == []


def test_bad_grouping_is_invalid_request():
    with runtime_over([]) as (runtime, _):
        for bad in ("model", 3, None, ""):
            with pytest.raises(QueryError) as info:
                kids(runtime, None, {"groupBy": bad})
            assert info.value.code == "SESSION_QUERY_INVALID_REQUEST"
