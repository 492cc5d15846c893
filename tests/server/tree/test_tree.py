"""Tree views (protocol.md §6) end to end: the real server over stdio (pytest-lsp).

Every walk also checks the treeParent round trip: for each node a level returns,
treeParent(node) is the id of the node that was expanded (absent for roots)."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest
from lsprotocol import types
from msgspec import UnsetType
from pygls.exceptions import JsonRpcException

from dsh_query_server.server.tree.nodes import TreeResource
from tests.builders import A, R, U, chunk, hdr, log_only, user_data, write_transcript
from tests.tree_helpers import call, children, client_fixture, parent_of, walk

pytestmark = [pytest.mark.wire, pytest.mark.slow]

client = client_fixture  # the shared server fixture, under the name the tests take


def by_label(nodes):
    return {n["label"]: n for n in nodes}


def tool_call(seq, name="bash", arguments='{"cmd": "ls"}'):
    return log_only(
        "tool/call",
        seq,
        {"turn": 1, "step": 1, "callId": "c1", "name": name, "arguments": arguments},
    )


def title_event(seq, title):
    return log_only(
        "session/title", seq, {"title": title, "messageSeqs": [0], "source": {"kind": "user"}}
    )


async def test_sessions_roots_labels_badges_and_icons(client, tmp_path):
    now = int(time.time() * 1000)
    root = tmp_path / "root"
    write_transcript(
        root,
        hdr("archived", 1000, cwd="/proj"),
        [U(0, "old question"), title_event(1, "Archived work")],
    )
    write_transcript(root, hdr("shared", 2000), [U(0, "shared start")])  # one event on disk
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("shared", 2000), "seed": [U(0, "shared start").to_value()]},
    )
    await call(
        client,
        "sessionStore/append",
        {"sessionId": "shared", "events": [{"type": "turn/start", "data": {"turn": 1}}]},
    )
    fresh_at = now - 5 * 60 * 1000 - 10_000
    await call(
        client,
        "sessionStore/create",
        {
            "header": hdr("fresh", fresh_at, cwd="/work/app"),
            "seed": [U(0, "Please   fix\nthe " + "very " * 30 + "long bug").to_value()],
        },
    )
    await call(
        client,
        "sessionStore/create",
        {
            "header": hdr(
                "helper",
                fresh_at + 1,
                parentSession="fresh",
                origin="subagent",
                delegationDepth=1,
                seedLength=1,
            ),
            "seed": [U(0, "Please fix the bug").to_value(), U(1, "sub task").to_value()],
        },
    )
    await call(client, "sessionStore/create", {"header": hdr("bare", 500)})
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}?readOnly=true"})

    roots = await children(client, "sessions")
    # The sub-agent "helper" is nested under its parent "fresh", not listed at the top.
    assert [n["resource"] for n in roots] == [
        {"sessionId": s} for s in ("fresh", "shared", "archived", "bare")
    ]
    fresh, shared, archived, bare = roots
    # Labels: title, else the first user message (after the seed for a sub-agent), else the id;
    # cut after a whole word so that the description still shows.
    assert archived["label"] == "Archived work"
    assert fresh["label"] == "Please fix the very very very…"
    assert len(fresh["label"]) <= 32
    assert bare["label"] == "bare"
    assert shared["label"] == "shared start"
    # Badges, icons, context values: the agent, the date and the state are always named.
    assert fresh["description"] == "dsh · 5 min ago · live"
    assert fresh["icon"] == "circle-filled" and fresh["contextValue"] == "session.live"
    assert archived["description"] == "dsh · 1970-01-01 · persisted"
    assert archived["icon"] == "history" and archived["contextValue"] == "session.persisted"
    assert (
        shared["description"] == "dsh · 1970-01-01 · live · persisted · lagging"
    )  # disk has 1 of 3 events
    assert shared["icon"] == "circle-filled" and shared["contextValue"] == "session.live"
    assert all(n["collapsible"] == "collapsed" and "command" not in n for n in roots)
    tooltip = archived["tooltip"].splitlines()
    assert (
        "id: archived" in tooltip
        and "cwd: /proj" in tooltip
        and "created: 1970-01-01T00:00:01.000Z" in tooltip
    )
    assert "lagging" not in fresh["tooltip"]
    assert "persisted copy holds 1 of 3 events" in shared["tooltip"]

    # A session expands to its Events and Lineage groups, then the sessions nested under it.
    groups = await children(client, "sessions", fresh["id"])
    assert [(g["label"], g["contextValue"], g["collapsible"]) for g in groups] == [
        ("Events", "group.events", "collapsed"),
        ("Lineage", "group.lineage", "collapsed"),
        ("sub task", "session.live", "collapsed"),
    ]
    helper = groups[2]
    assert helper["resource"] == {"sessionId": "helper"}
    assert helper["description"] == "sub-agent · dsh · 5 min ago · live"
    assert helper["icon"] == "type-hierarchy-sub" and "parent: fresh" in helper["tooltip"]
    assert await parent_of(client, "sessions", helper["id"]) == fresh["id"]
    assert groups[1]["description"] == "1 child"
    assert (
        await children(
            client, "sessions", (await children(client, "sessions", bare["id"]))[1]["id"]
        )
    ) == []
    assert (await children(client, "sessions", bare["id"]))[1]["description"] == "(none)"
    links = await children(client, "sessions", groups[1]["id"])
    assert [(n["label"], n["description"].split(" · ")[0], n["collapsible"]) for n in links] == [
        ("sub task", "sub-agent", "none")
    ]
    helper_groups = await children(client, "sessions", helper["id"])
    assert [g["label"] for g in helper_groups] == ["Events", "Lineage"]
    up = await children(client, "sessions", helper_groups[1]["id"])
    assert up[0]["resource"] == {"sessionId": "fresh"} and up[0]["description"].startswith(
        "parent · "
    )
    events = await children(client, "sessions", groups[0]["id"])
    # Event summaries are the first line of the text; session labels use all of it.
    assert [e["label"] for e in events] == ['#0 user/message "Please fix"', "#1 session/end-seed"]

    # Every node of the view (sessions expanded two levels down) round-trips through treeParent.
    found, _ = await walk(client, "sessions")
    assert len(found) > 20


async def test_lagging_from_the_checkpointer(client):
    await call(client, "sessionStore/create", {"header": hdr("ck", 1), "seed": [U(0).to_value()]})
    await call(client, "sessionPersistence/mount", {"uri": "test:memory"})
    assert (await call(client, "sessionStore/checkpoint", {"sessionId": "ck"})) == {
        "flushed": {"ck": 1}
    }
    [node] = await children(client, "sessions")
    assert node["description"] == "dsh · 1970-01-01 · live · persisted"
    await call(
        client,
        "sessionStore/append",
        {"sessionId": "ck", "events": [{"type": "turn/start", "data": {"turn": 1}}]},
    )
    [node] = await children(client, "sessions")
    assert node["description"] == "dsh · 1970-01-01 · live · persisted · lagging"
    await call(client, "sessionStore/checkpoint", {})
    [node] = await children(client, "sessions")
    assert node["description"] == "dsh · 1970-01-01 · live · persisted"


async def test_events_view_surface_statuses(client):
    seed = [
        U(0, "find the needle\nsecond line"),
        chunk(1),
        tool_call(2),
        A(3, "compacted summary", op=R(0, 0), src=[0]),
        log_only("turn/end", 4, {"turn": 1, "reason": {"kind": "completed"}}),
        title_event(5, "Needle hunt"),
    ]
    await call(
        client, "sessionStore/create", {"header": hdr("s"), "seed": [e.to_value() for e in seed]}
    )
    nodes = await children(client, "events", args={"sessionId": "s"})
    assert [n["label"] for n in nodes] == [
        '#0 user/message "find the needle"',
        "#1 assistant/chunk",
        "#2 tool/call bash",
        '#3 assistant/message "compacted summary"',
        "#4 turn/end completed",
        '#5 session/title "Needle hunt"',
        "#6 session/end-seed",
    ]
    surfaces = ["shadowed", "log-only", "log-only", "current", "log-only", "log-only", "log-only"]
    icons = {"current": "circle-filled", "shadowed": "circle-slash", "log-only": "circle-outline"}
    for seq, (node, surface) in enumerate(zip(nodes, surfaces, strict=True)):
        assert node["description"].split(" · ")[0] == surface
        assert node["icon"] == icons[surface] and node["contextValue"] == f"event.{surface}"
        assert node["resource"] == {"sessionId": "s", "seq": seq} and node["collapsible"] == "none"
        assert node["command"] == {
            "title": "Open Event",
            "command": "dshQuery.openEvent",
            "arguments": [{"sessionId": "s", "seq": seq}],
        }
        assert await parent_of(client, "events", node["id"]) is None
        assert await children(client, "events", node["id"]) == []
    assert "find the needle\nsecond line" in nodes[0]["tooltip"]
    # The same ids are issued again on refresh (stable), and node ids are per view.
    assert [n["id"] for n in await children(client, "events", args={"sessionId": "s"})] == [
        n["id"] for n in nodes
    ]
    with pytest.raises(JsonRpcException) as info:
        await parent_of(client, "sessions", nodes[0]["id"])
    assert info.value.code == -32602


async def test_paging_with_more_nodes(client):
    await call(
        client,
        "sessionStore/create",
        {
            "header": hdr("long", 10**6),
            "seed": [log_only("turn/start", i, {"turn": i}).to_value() for i in range(450)],
        },
    )  # + end-seed = 451 events
    found, parents = await walk(client, "events", {"sessionId": "long"})
    more = [n for n in found.values() if n["contextValue"] == "more"]
    assert [(m["label"], m["description"], m["collapsible"], m["icon"]) for m in more] == [
        ("More…", "252 more events", "collapsed", "ellipsis"),
        ("More…", "53 more events", "collapsed", "ellipsis"),
    ]
    events = [n for n in found.values() if n["contextValue"] != "more"]
    assert sorted(n["resource"]["seq"] for n in events) == list(range(451))
    first = await children(client, "events", args={"sessionId": "long"})
    assert (
        len(first) == 200
        and first[-1]["id"] == more[0]["id"]
        and first[198]["label"] == "#198 turn/start"
    )
    second = await children(client, "events", more[0]["id"])
    assert (
        second[0]["label"].startswith("#199 ")
        and second[-1]["id"] == more[1]["id"]
        and len(second) == 200
    )
    assert parents[more[1]["id"]] == more[0]["id"]

    # The sessions root pages the same way; a session on page two knows its parent.
    for i in range(205):
        await call(client, "sessionStore/create", {"header": hdr(f"s{i:03}", i)})
    _, sessions = await walk(client, "sessions", expand=lambda n: n["contextValue"] == "more")
    roots = await children(client, "sessions")
    assert (
        len(roots) == 200
        and roots[-1]["contextValue"] == "more"
        and roots[-1]["description"] == "7 more sessions"
    )
    assert roots[0]["resource"] == {"sessionId": "long"} and roots[1]["resource"] == {
        "sessionId": "s204"
    }
    page2 = await children(client, "sessions", roots[-1]["id"])
    assert [n["resource"]["sessionId"] for n in page2] == [
        "s006",
        "s005",
        "s004",
        "s003",
        "s002",
        "s001",
        "s000",
    ]
    assert all(sessions[n["id"]] == roots[-1]["id"] for n in page2)


async def test_lineage_two_levels_and_unresolved_parent(client, tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("top", 1), [U(0, "top question")])
    write_transcript(root, hdr("stray", 5, parentSession="ghost"), [U(0, "stray question")])
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("mid", 2, parentSession="top", origin="subagent", delegationDepth=1)},
    )
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("leaf", 3, parentSession="mid", origin="subagent", delegationDepth=2)},
    )
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("leaf2", 4, parentSession="mid", origin="subagent", delegationDepth=2)},
    )
    await call(
        client, "sessionStore/create", {"header": hdr("stray-kid", 6, parentSession="stray")}
    )
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}?readOnly=true"})

    roots = await children(client, "lineage", args={"sessionId": "leaf"})
    assert [
        (n["resource"]["sessionId"], n["description"].split(" · ")[0], n["collapsible"])
        for n in roots
    ] == [("top", "root", "none"), ("mid", "parent", "none"), ("leaf", "target", "none")]
    assert roots[0]["label"] == "top question" and roots[0]["icon"] == "history"
    assert (
        roots[0]["contextValue"] == "session.persisted"
        and roots[1]["contextValue"] == "session.live"
    )
    assert roots[1]["icon"] == roots[2]["icon"] == "type-hierarchy-sub"

    found, parents = await walk(client, "lineage", {"sessionId": "top"})
    tree = {(n["resource"]["sessionId"], n["collapsible"]): parents[i] for i, n in found.items()}
    ids = {n["resource"]["sessionId"]: i for i, n in found.items()}
    assert tree == {
        ("top", "expanded"): None,
        ("mid", "collapsed"): ids["top"],
        ("leaf", "none"): ids["mid"],
        ("leaf2", "none"): ids["mid"],
    }
    assert found[ids["mid"]]["description"].startswith("sub-agent · ")

    roots = await children(client, "lineage", args={"sessionId": "stray-kid"})
    assert [(n["label"], n["icon"], n["contextValue"]) for n in roots[:1]] == [
        ('parent "ghost" not in corpus', "warning", "lineage.unresolved")
    ]
    assert [n["description"].split(" · ")[0] for n in roots[1:]] == [
        "parent",
        "target",
    ]  # stray is no root
    await walk(client, "lineage", {"sessionId": "stray-kid"})

    # The sessions view shows the same unresolved parent inside a session's Lineage group.
    stray = next(
        n for n in await children(client, "sessions") if n["resource"] == {"sessionId": "stray"}
    )
    lineage_group = (await children(client, "sessions", stray["id"]))[1]
    assert lineage_group["description"] == "parent · 1 child"
    links = await children(client, "sessions", lineage_group["id"])
    assert [(n["label"], n["icon"]) for n in links] == [
        ('parent "ghost" not in corpus', "warning"),
        ("stray-kid", "type-hierarchy-sub"),
    ]


async def test_event_trace_groups(client):
    seed = [
        U(0, "question"),
        A(1, "answer"),
        A(2, "summary one", op=R(0, 1), src=[0, 1]),
        A(3, "summary two", op=R(2, 2), src=[2]),
        U(4, "follow up", src=[2]),
    ]
    await call(
        client, "sessionStore/create", {"header": hdr("t"), "seed": [e.to_value() for e in seed]}
    )
    found, parents = await walk(client, "eventTrace", {"sessionId": "t", "seq": 2})
    roots = [n for i, n in found.items() if parents[i] is None]
    assert [(n["label"], n.get("description"), n["collapsible"]) for n in roots] == [
        ('#2 assistant/message "summary one"', roots[0]["description"], "none"),
        ("Replaced by", "1", "expanded"),
        ("Replacement chain", "1", "expanded"),
        ("Replaced events", "2", "expanded"),
        ("Sources", "2", "expanded"),
        ("Derived events", "2", "expanded"),
    ]
    assert roots[0]["description"].startswith("target · shadowed · ")
    assert (
        roots[0]["contextValue"] == "event.shadowed"
        and roots[0]["command"]["command"] == "dshQuery.openEvent"
    )
    assert [n["contextValue"] for n in roots[1:]] == [
        "group.replacedBy",
        "group.chain",
        "group.replaced",
        "group.sources",
        "group.derived",
    ]
    groups = {
        n["label"]: [c["resource"]["seq"] for i, c in found.items() if parents[i] == n["id"]]
        for n in roots[1:]
    }
    assert groups == {
        "Replaced by": [3],
        "Replacement chain": [3],
        "Replaced events": [0, 1],
        "Sources": [0, 1],
        "Derived events": [3, 4],
    }
    link = next(c for i, c in found.items() if parents[i] == roots[3]["id"])
    assert (
        link["label"] == '#0 user/message "question"' and link["contextValue"] == "event.shadowed"
    )
    assert link["resource"] == {"sessionId": "t", "seq": 0}
    assert link["command"] == {
        "title": "Open Event",
        "command": "dshQuery.openEvent",
        "arguments": [{"sessionId": "t", "seq": 0}],
    }

    first = await children(client, "eventTrace", args={"sessionId": "t", "seq": 0})
    assert [(n["label"], n.get("description"), n["collapsible"]) for n in first[1:]] == [
        ("Replaced by", "1", "expanded"),
        ("Replacement chain", "2", "expanded"),
        ("Replaced events", "(none)", "none"),
        ("Sources", "(none)", "none"),
        ("Derived events", "1", "expanded"),
    ]
    chain = await children(client, "eventTrace", first[2]["id"])
    assert [n["label"] for n in chain] == [
        '#2 assistant/message "summary one"',
        '#3 assistant/message "summary two"',
    ]

    # A large group pages like every other level.
    await call(
        client,
        "sessionStore/append",
        {
            "sessionId": "t",
            "events": [
                {
                    "type": "assistant/message",
                    "data": A(0, f"cites {i}").to_value()["data"],
                    "surfaceOp": "append",
                    "sourceEventSeqs": [4],
                }
                for i in range(205)
            ],
        },
    )
    found, parents = await walk(client, "eventTrace", {"sessionId": "t", "seq": 4})
    derived = next(n for n in found.values() if n["label"] == "Derived events")
    assert derived["description"] == "205"
    page = await children(client, "eventTrace", derived["id"])
    assert (
        len(page) == 200
        and page[-1]["contextValue"] == "more"
        and page[-1]["description"] == "6 more events"
    )
    assert sum(1 for i in found if parents[i] in (derived["id"], page[-1]["id"])) == 206


async def test_errors_are_nodes(client, tmp_path):
    await call(client, "sessionStore/create", {"header": hdr("s"), "seed": [U(0).to_value()]})
    [node] = await children(client, "events", args={"sessionId": "missing"})
    assert (
        node["label"],
        node["contextValue"],
        node["icon"],
        node["collapsible"],
        node["description"],
    ) == (
        'session "missing" not found',
        "error",
        "error",
        "none",
        "SESSION_QUERY_SESSION_NOT_FOUND",
    )
    assert await parent_of(client, "events", node["id"]) is None
    assert await children(client, "events", node["id"]) == []
    [node] = await children(client, "eventTrace", args={"sessionId": "s", "seq": 9})
    assert node["label"] == 'session "s" has no event at seq 9' and node["contextValue"] == "error"
    [node] = await children(client, "lineage", args={"sessionId": "missing"})
    assert node["contextValue"] == "error"

    # A session that disappears under an expanded node: the error sits under that node.
    [session] = await children(client, "sessions")
    events_group = (await children(client, "sessions", session["id"]))[0]
    await call(client, "sessionStore/remove", {"sessionId": "s"})
    [node] = await children(client, "sessions", events_group["id"])
    assert (
        node["contextValue"] == "error"
        and await parent_of(client, "sessions", node["id"]) == events_group["id"]
    )

    root = tmp_path / "root"
    write_transcript(root, hdr("a", parentSession="b"), [U(0)])
    write_transcript(root, hdr("b", parentSession="a"), [U(0)])
    write_transcript(
        root,
        hdr("bad-surface"),
        [{"type": "user/message", "seq": 0, "time": 1, "data": user_data()}],
    )
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}"})
    [node] = await children(client, "lineage", args={"sessionId": "a"})
    assert (
        node["description"] == "SESSION_QUERY_INVALID_LINEAGE" and node["contextValue"] == "error"
    )
    [node] = await children(client, "events", args={"sessionId": "bad-surface"})
    assert node["description"] == "SESSION_QUERY_INVALID_SURFACE"

    await call(client, "sessionPersistence/mount", {"uri": "test:failing"})
    [node] = await children(client, "sessions")
    assert node["label"] == "session persistence listing failed: injected failure"
    assert node["description"] == "SESSION_QUERY_PERSISTENCE_FAILED"

    # Cancellation is not a view failure: it still answers -32800, after the backend call settles.
    marker = tmp_path / "marker"
    await call(client, "sessionPersistence/mount", {"uri": f"test:slow:500:{marker}"})
    task = asyncio.ensure_future(children(client, "sessions"))
    await asyncio.sleep(0.2)
    client.protocol.notify(
        "$/cancelRequest", types.CancelParams(id=max(client.protocol._request_futures))
    )
    with pytest.raises(JsonRpcException) as info:
        await task
    assert (info.value.code, info.value.data) == (-32800, {"code": "SESSION_QUERY_ABORTED"})
    assert marker.read_text() == "list settled\n"


def raw_id(value) -> str:
    return (
        base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode())
        .rstrip(b"=")
        .decode()
    )


async def test_invalid_params_are_32602(client):
    await call(client, "sessionStore/create", {"header": hdr("s"), "seed": [U(0).to_value()]})
    event, _ = await children(client, "events", args={"sessionId": "s"})
    cases = [
        ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": "!!! not base64 !!!"}),
        ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": raw_id({"a": 1})}),
        ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": raw_id(["sessions", "nope"])}),
        (
            "sessionQuery/treeChildren",
            {"view": "sessions", "nodeId": raw_id(["sessions", "more", 7])},
        ),
        ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": raw_id(["sessions", "s", 5])}),
        (
            "sessionQuery/treeChildren",
            {"view": "sessions", "nodeId": event["id"]},
        ),  # an events-view id
        ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": 12}),
        ("sessionQuery/treeChildren", {"view": "nope"}),
        ("sessionQuery/treeChildren", {}),
        ("sessionQuery/treeChildren", {"view": "events"}),
        ("sessionQuery/treeChildren", {"view": "events", "args": {"sessionId": 3}}),
        ("sessionQuery/treeChildren", {"view": "lineage", "args": []}),
        (
            "sessionQuery/treeChildren",
            {"view": "eventTrace", "args": {"sessionId": "s", "seq": "0"}},
        ),
        ("sessionQuery/treeParent", {"view": "events"}),
        ("sessionQuery/treeParent", {"view": "events", "nodeId": "garbage"}),
    ]
    for method, params in cases:
        with pytest.raises(JsonRpcException) as info:
            await call(client, method, params)
        assert info.value.code == -32602, params
        assert info.value.data == {"code": "SESSION_QUERY_INVALID_REQUEST"}, params
    # Node ids are self-describing: ids this server never issued in this process still answer.
    assert await children(client, "events", raw_id(["events", "emore", "s", 199])) == []
    assert await parent_of(client, "events", raw_id(["events", "e", "s", 450])) == raw_id(
        ["events", "emore", "s", 398]
    )


async def test_lineage_paging_long_chain_and_many_children(client):
    # c000 <- c001 <- ... <- c418 (the target), which has 205 direct children.
    for i in range(419):
        header = hdr(f"c{i:03}", i, **({"parentSession": f"c{i - 1:03}"} if i else {}))
        await call(client, "sessionStore/create", {"header": header})
    for i in range(205):
        await call(
            client,
            "sessionStore/create",
            {"header": hdr(f"k{i:03}", 1000 + i, parentSession="c418")},
        )
    found, parents = await walk(client, "lineage", {"sessionId": "c418"})
    roots = [n for i, n in found.items() if parents[i] is None]
    # 418 ancestors: "Earlier ancestors…" + the 197 nearest, then the target: one level, <= 200 nodes.
    assert [n["label"] for n in roots[:1]] == ["Earlier ancestors…"] and roots[0][
        "description"
    ] == "221 more ancestors"
    assert [n["resource"]["sessionId"] for n in roots[1:3]] == ["c221", "c222"] and len(
        roots
    ) == 199
    assert roots[-2]["description"].startswith("parent · ") and roots[-1]["description"].startswith(
        "target · "
    )
    ancestors = [
        n
        for n in found.values()
        if n["description"].split(" · ")[0] in ("root", "parent", "ancestor")
    ]
    assert sorted(n["resource"]["sessionId"] for n in ancestors) == [f"c{i:03}" for i in range(418)]
    assert next(n for n in ancestors if n["resource"]["sessionId"] == "c000")[
        "description"
    ].startswith("root · ")
    kids = [n for n in found.values() if n.get("resource", {}).get("sessionId", "").startswith("k")]
    assert len(kids) == 205
    target = roots[-1]["id"]
    first = await children(client, "lineage", target)
    assert (
        len(first) == 200
        and first[-1]["contextValue"] == "more"
        and first[-1]["description"] == "6 more children"
    )
    assert [n["resource"]["sessionId"] for n in first[:2]] == [
        "k000",
        "k001",
    ]  # oldest first, like traceSession

    # The sessions view's Lineage group of c418: its parent link, then its children, paged.
    group = raw_id(["sessions", "lineage", "c418"])
    links = await children(client, "sessions", group)
    assert len(links) == 200 and links[0]["description"].startswith("parent · ")
    assert links[-1]["contextValue"] == "more" and links[-1]["description"] == "7 more children"
    rest = await children(client, "sessions", links[-1]["id"])
    assert [n["resource"]["sessionId"] for n in rest] == [f"k{i:03}" for i in range(198, 205)]
    for node in links:
        assert await parent_of(client, "sessions", node["id"]) == group
    for node in rest:
        assert await parent_of(client, "sessions", node["id"]) == links[-1]["id"]
    assert await parent_of(client, "sessions", group) == raw_id(["sessions", "s", "c418"])


def session_of(resource: TreeResource | UnsetType) -> str:
    assert isinstance(resource, TreeResource), resource
    return resource.sessionId


def test_persisted_titles_stop_at_the_label_budget(monkeypatch):
    """Past the time budget, persisted sessions keep their id as label instead of stalling."""
    from dsh_query_server.cancel import CancelToken
    from dsh_query_server.core.config import build_config
    from dsh_query_server.core.runtime import Runtime
    from dsh_query_server.server import tree
    from dsh_query_server.server.tree import context
    from tests.builders import log_only
    from tests.fakes import MemoryBackend

    runtime = Runtime(
        build_config({"persistence": None, "index": ":memory:", "search": {"openAt": "never"}}),
        lambda ids, corpus: None,
    )
    backend = MemoryBackend()
    backend.put(
        {"version": 0, "id": "stored", "createdAt": 1},
        [
            log_only(
                "session/title",
                0,
                {"title": "A stored title", "messageSeqs": [], "source": {"kind": "user"}},
            )
        ],
    )
    runtime.binding.mount(backend)

    def labels() -> list[str]:
        return [n.label for n in tree.tree_children(runtime, "sessions", None, {}, CancelToken())]

    assert labels() == ["A stored title"]
    monkeypatch.setattr(context, "LABEL_BUDGET_SECONDS", -1)
    assert labels() == ["stored"]


def test_persisted_labels_pass_the_checks_titles_pass():
    """A label is read the way readTitles reads a title: through the service's failure mapping
    and its listed-versus-inspected header check. Where readTitles rejects a session (corrupt
    log, conflicting headers, failing backend read), its label is the id; the others keep theirs."""
    from dsh_query_server.cancel import CancelToken
    from dsh_query_server.core.config import build_config
    from dsh_query_server.core.runtime import Runtime
    from dsh_query_server.model.event import Header
    from dsh_query_server.server import tree
    from tests.builders import log_only
    from tests.fakes import MemoryBackend

    runtime = Runtime(
        build_config({"persistence": None, "index": ":memory:", "search": {"openAt": "never"}}),
        lambda ids, corpus: None,
    )
    backend = MemoryBackend()
    for i, sid in enumerate(["good", "clash", "broken"]):
        backend.put(
            {"version": 0, "id": sid, "createdAt": 10 - i, "cwd": "/w"},
            [
                log_only(
                    "session/title",
                    0,
                    {"title": f"title of {sid}", "messageSeqs": [], "source": {"kind": "user"}},
                )
            ],
        )
    backend.inspect_meta["clash"] = Header.from_value(
        {"version": 0, "id": "clash", "createdAt": 9, "cwd": "/elsewhere"}
    )
    backend.corrupt.add("broken")
    runtime.binding.mount(backend)
    nodes = tree.tree_children(runtime, "sessions", None, {}, CancelToken())
    labels = {session_of(n.resource): n.label for n in nodes}
    assert labels == {"good": "title of good", "clash": "clash", "broken": "broken"}
    titles = runtime.service.read_titles(["good", "clash", "broken"], CancelToken())
    assert [t.status for t in titles] == ["fulfilled", "rejected", "rejected"]
    backend.fail["inspect"] = OSError("disk gone")
    nodes = tree.tree_children(runtime, "sessions", None, {}, CancelToken())
    assert [n.label for n in nodes] == ["good", "clash", "broken"]


@pytest.mark.parametrize(
    "case", ["plain", "seeded", "seed-past-window", "titled", "bad-title", "late-user"]
)
def test_persisted_labels_from_windows_equal_labels_from_whole_logs(tmp_path, case):
    """A backend with inspect_window gives a label from a few windows; it is the label the whole
    log gives, as long as the first message sits within LABEL_EVENTS of the start or the seed."""
    from dsh_query_server.model.event import Header
    from dsh_query_server.persistence.sqlite import SqliteBackend
    from dsh_query_server.query.titlefold import last_title_event
    from dsh_query_server.server.tree import labels
    from tests.builders import T

    header = {"version": 0, "id": "s", "createdAt": 1}
    events = [] if case == "late-user" else [U(0, "the parent's question")]
    pad = {"seed-past-window": 100, "late-user": 70}.get(case, 3)
    events += [log_only("x/note", len(events) + i) for i in range(pad)]
    if case in ("seeded", "seed-past-window"):
        header["seedLength"] = len(events)
    events.append(U(len(events), "what this session is about"))
    if case == "titled":
        events.append(title_event(len(events), "A title"))
        events.append(title_event(len(events), "The last title"))
    if case == "bad-title":
        events.append(log_only("session/title", len(events), {"title": 7}))
    events.append(T(len(events), "out"))
    backend = SqliteBackend(str(tmp_path / "s.db"))
    backend.create(Header.from_value(header))
    backend.append("s", events)
    inspection = backend.inspect("s")
    whole = labels.project(
        "s", inspection.meta, inspection.events, last_title_event(inspection.events)
    )
    windows = labels.project_windows("s", lambda a, b: backend.inspect_window("s", a, b))
    if case == "late-user":  # past LABEL_EVENTS: the window label gives up on the first message
        assert windows.first_message is None and whole.first_message == "what this session is about"
        windows = labels.SessionInfo(windows.title, whole.first_message, windows.events)
    assert windows == whole
    assert whole.title == {"titled": "The last title"}.get(case)
    backend.close()


# -- node ids, the worker pool and the shared command ids (in process) -------------------------


def _key_strategy():
    """Keys of every registered kind of every view, with parameters drawn from each kind's
    parameter types (and some that a kind does not accept)."""
    from hypothesis import strategies as st

    from dsh_query_server.server.tree import VIEWS

    values = st.one_of(
        st.text(max_size=8),
        st.integers(min_value=-3, max_value=2**53 + 1),
        st.sampled_from(["chain", "sources", "derived", "nope"]),
        st.none(),
        st.booleans(),
        st.floats(allow_nan=False),
    )
    return st.tuples(
        st.sampled_from(sorted(VIEWS)),
        st.sampled_from(sorted({k for v in VIEWS.values() for k in v.kinds})),
        st.lists(values, max_size=5),
    )


def test_node_ids_round_trip_exactly_the_keys_a_view_declares():
    """Every id decodes to the key it was encoded from when that key is one of the view's kinds
    with acceptable params; any other array or string is INVALID_REQUEST, never another error."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from dsh_query_server import errors
    from dsh_query_server.errors import QueryError
    from dsh_query_server.server.tree import VIEWS
    from dsh_query_server.server.tree.ids import encode_id
    from dsh_query_server.server.tree.kinds import decode_id

    @settings(max_examples=400, deadline=None)
    @given(_key_strategy(), st.sampled_from(sorted(VIEWS)))
    def check(drawn, asked):
        view, kind, params = drawn
        key = (view, kind, *params)
        spec = VIEWS[view].kinds.get(kind)
        ok = view == asked and spec is not None and spec.accepts(params)
        try:
            decoded = decode_id(VIEWS[asked], encode_id(key))
        except QueryError as exc:
            assert exc.code == errors.INVALID_REQUEST and not ok
        else:
            assert ok and decoded == key

    check()

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=40))
    def garbage(text):
        try:
            decode_id(VIEWS["sessions"], text)
        except QueryError as exc:
            assert exc.code == errors.INVALID_REQUEST

    garbage()


def test_pager_ids_accept_only_page_boundaries():
    from dsh_query_server.errors import QueryError
    from dsh_query_server.server.tree import PAGE, VIEWS
    from dsh_query_server.server.tree.ids import LINK_PAGE, encode_id
    from dsh_query_server.server.tree.kinds import decode_id

    sessions = VIEWS["sessions"]
    assert decode_id(sessions, encode_id(("sessions", "more", PAGE))) == ("sessions", "more", PAGE)
    assert decode_id(sessions, encode_id(("sessions", "cmore", "s", LINK_PAGE)))
    for bad in [
        ("sessions", "more", 0),
        ("sessions", "more", PAGE + 1),
        ("sessions", "cmore", "s", PAGE),
        ("sessions", "emore", "s", LINK_PAGE),
        ("lineage", "amore", "s", 0),
        ("sessions", "more", True),
    ]:
        view = VIEWS[bad[0]]
        with pytest.raises(QueryError):
            decode_id(view, encode_id(bad))


def test_worker_pool_runs_each_item_once_within_its_bound():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from dsh_query_server.cancel import CancelToken
    from dsh_query_server.query.workers import run_claims

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(), max_size=30, unique=True), st.integers(min_value=0, max_value=5))
    def check(items, concurrency):
        import threading

        seen: list[int] = []
        lock = threading.Lock()
        running = [0, 0]  # now, most at once

        def work(item):
            with lock:
                running[0] += 1
                running[1] = max(running)
            time.sleep(0.0005)
            with lock:
                running[0] -= 1
                seen.append(item)

        run_claims(items, work, concurrency, CancelToken())
        assert sorted(seen) == sorted(items)
        assert running[1] <= max(1, concurrency)

    check()


def test_worker_pool_claims_nothing_after_cancel_or_past_the_deadline():
    from dsh_query_server.cancel import CancelToken
    from dsh_query_server.query.workers import run_claims

    token, seen = CancelToken(), []

    def work(item):
        seen.append(item)
        token.cancel()  # the first item cancels the request: no further claim

    run_claims(range(10), work, 1, token)
    assert seen == [0]
    late: list[int] = []
    run_claims(range(10), late.append, 2, CancelToken(), deadline=time.monotonic() - 1)
    assert late == []


def test_generated_command_modules_match_their_source():
    """The Lua and TypeScript copies of the shared command ids are what gen_commands writes
    from server/tree/commands.py (regenerate: `python -m dsh_query_server.devtools.gen_commands`)."""
    from dsh_query_server.devtools import gen_commands

    assert gen_commands.drifted() == []
    assert gen_commands.main(["--check"]) == 0


def test_command_drift_check_fails_on_a_stale_copy(tmp_path, monkeypatch):
    from dsh_query_server.devtools import gen_commands

    lua, ts = tmp_path / "commands.lua", tmp_path / "commandIds.ts"
    monkeypatch.setattr(gen_commands, "ROOT", tmp_path)
    monkeypatch.setattr(gen_commands, "LUA", lua)
    monkeypatch.setattr(gen_commands, "TS", ts)
    assert gen_commands.main(["--check"]) == 1  # missing
    assert gen_commands.main([]) == 0 and gen_commands.main(["--check"]) == 0
    lua.write_text(lua.read_text().replace("dshQuery.openEvent", "dshQuery.openEvnt"))
    assert gen_commands.main(["--check"]) == 1
    assert gen_commands.drifted() == [lua]


def test_command_ids_have_one_source():
    """The server registers exactly the shared server commands, and no editor source spells a
    shared id itself: each takes it from its generated module."""
    import re
    from pathlib import Path

    from dsh_query_server.server import methods
    from dsh_query_server.server.tree import commands

    assert sorted(methods.COMMANDS) == sorted(commands.SERVER_COMMANDS)
    root = Path(__file__).resolve().parents[3]
    sources = [
        *(root / "editor" / "nvim" / "lua").rglob("*.lua"),
        *(root / "vscode-extension" / "src").glob("*.ts"),
    ]
    generated = {
        root / "editor/nvim/lua/dsh_query/commands.lua",
        root / "vscode-extension/src/commandIds.ts",
        # the protocol types generated from the schema (devtools/tsgen.py) name them too
        root / "vscode-extension/src/protocol.gen.ts",
    }
    spelled = re.compile("|".join(re.escape(f'"{v}') for v in commands.SHARED.values()))
    copies = [
        str(p.relative_to(root))
        for p in sources
        if p not in generated and spelled.search(p.read_text(encoding="utf-8"))
    ]
    assert copies == []
    assert len([p for p in sources if p in generated]) == 3


def test_the_lua_command_module_loads_in_neovim():
    import os
    import shutil
    import subprocess
    from pathlib import Path

    from dsh_query_server.server.tree import commands

    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed (make test installs it: mk/nvim.mk)")
    plugin = Path(__file__).resolve().parents[3] / "editor" / "nvim"
    script = (
        "lua vim.opt.runtimepath:append(vim.env.DSH_PLUGIN); "
        "io.stdout:write(vim.fn.json_encode(require('dsh_query.commands')))"
    )
    out = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", script, "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "DSH_PLUGIN": str(plugin)},
        check=True,
    )
    assert json.loads(out.stdout) == commands.SHARED
