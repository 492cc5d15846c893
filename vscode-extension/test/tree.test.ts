import { strict as assert } from "node:assert";
import { test } from "node:test";
import { ServerTreeProvider, nodeCommand, toTreeItem, type TreeElement } from "../src/tree";
import { knownCommand } from "../src/ids";
import { FakeTreeServer, RpcError } from "./fake-server";
import type { TreeNode } from "../src/protocol";
import { EventEmitter, ThemeIcon, TreeItemCollapsibleState } from "./vscode-stub";

function corpus(n = 3): FakeTreeServer {
  return new FakeTreeServer(
    Array.from({ length: n }, (_, i) => ({
      id: `sess/${i}?#%`,
      live: i === 0,
      events: [
        { type: "user/message", surface: "current" },
        { type: "assistant/chunk", surface: "log-only" },
        { type: "assistant/message", surface: "shadowed" },
      ],
    })),
  );
}

function provider(server: FakeTreeServer | undefined, view: "sessions" | "events" = "sessions", args?: Record<string, unknown>) {
  const roots: number[] = [];
  const p = new ServerTreeProvider("t", () => server, knownCommand, { view, args }, { onRoots: (n) => roots.push(n.length) });
  const fired = (p as unknown as { changed: EventEmitter<unknown> }).changed.fired;
  return { p, roots, fired };
}

test("roots and children come from treeChildren with view, nodeId and args", async () => {
  const server = corpus();
  const { p, roots } = provider(server);
  const top = await p.getChildren();
  assert.equal(top.length, 3);
  assert.deepEqual(server.log[0], { method: "sessionQuery/treeChildren", params: { view: "sessions" } });
  assert.deepEqual(roots, [3]);
  const kids = await p.getChildren(top[1]);
  assert.deepEqual(server.log[1].params, { view: "sessions", nodeId: top[1].node.id });
  assert.deepEqual(
    kids.map((k) => k.node.label),
    ["#0 user/message", "#1 assistant/chunk", "#2 assistant/message"],
  );
  const { p: ev } = provider(server, "events", { sessionId: "sess/1?#%" });
  const evs = await ev.getChildren();
  assert.equal(evs.length, 3);
  assert.deepEqual(server.log.at(-1)?.params, { view: "events", args: { sessionId: "sess/1?#%" } });
});

test("tree items: stable id, codicon, contextValue, collapsible state, command", async () => {
  const { p } = provider(corpus());
  const [first] = await p.getChildren();
  const item = p.getTreeItem(first);
  assert.equal(item.id, first.node.id);
  assert.equal(item.label, "sess/0?#%");
  assert.equal(item.description, "3 events · live");
  assert.equal((item.iconPath as unknown as ThemeIcon).id, "circle-filled");
  assert.equal(item.contextValue, "session.live");
  assert.equal(item.collapsibleState, TreeItemCollapsibleState.Collapsed);
  assert.equal(item.command, undefined, "session rows select, they do not run a command");
  const [event] = await p.getChildren(first);
  const ei = p.getTreeItem(event);
  assert.equal(ei.collapsibleState, TreeItemCollapsibleState.None);
  assert.deepEqual(ei.command, {
    title: "Open Event",
    command: "dshQuery.openEvent",
    arguments: [{ sessionId: "sess/0?#%", seq: 0 }],
  });
});

test("an event's icon takes its class's theme colour, and its description says the class", async () => {
  const { p } = provider(corpus());
  const [first] = await p.getChildren();
  const items = (await p.getChildren(first)).map((e) => p.getTreeItem(e));
  assert.deepEqual(
    items.map((i) => [i.description, (i.iconPath as unknown as ThemeIcon).color?.id]),
    [
      ["current", "charts.green"],
      ["log-only", "descriptionForeground"],
      ["shadowed", "gitDecoration.deletedResourceForeground"],
    ],
  );
  // a session (no class) keeps the theme's icon colour
  assert.equal((p.getTreeItem(first).iconPath as unknown as ThemeIcon).color, undefined);
});

test("a server command runs only when the client knows it", () => {
  const node = {
    id: "x",
    label: "x",
    collapsible: "none" as const,
    resource: { sessionId: "a", seq: 4 },
    command: { title: "T", command: "dshQuery.traceEvent", arguments: [{ sessionId: "a", seq: 4 }] },
  };
  assert.equal(nodeCommand(node, knownCommand)?.command, "dshQuery.traceEvent");
  assert.equal(nodeCommand({ ...node, command: { ...node.command, command: "dshQuery.server.status" } }, knownCommand)?.command, "dshQuery.server.status");
  assert.equal(nodeCommand({ ...node, command: { ...node.command, command: "elsewhere.cmd" } }, knownCommand)?.command, "dshQuery.openEvent");
  assert.equal(nodeCommand({ id: "y", label: "y", collapsible: "none" }, knownCommand), undefined);
});

test("error nodes are drawn distinctly", () => {
  const el: TreeElement = {
    uid: "err",
    node: { id: "err", label: 'session "x" not found', collapsible: "none", contextValue: "error" },
    parent: undefined,
    generation: 0,
  };
  const item = toTreeItem(el, knownCommand);
  const icon = item.iconPath as unknown as ThemeIcon;
  assert.equal(icon.id, "error");
  assert.equal(icon.color?.id, "list.errorForeground");
  assert.equal(item.tooltip, 'session "x" not found');
  assert.equal(item.command, undefined);
});

test("a failed request becomes an error node; a server without trees says so", async () => {
  const server = corpus();
  const { p } = provider(server);
  server.failWith = new RpcError(-32803, 'session "x" not found', { code: "SESSION_QUERY_SESSION_NOT_FOUND" });
  let nodes = await p.getChildren();
  assert.equal(nodes.length, 1);
  assert.equal(nodes[0].node.contextValue, "error");
  assert.equal(nodes[0].node.label, 'SESSION_QUERY_SESSION_NOT_FOUND: session "x" not found');
  assert.deepEqual(await p.getChildren(nodes[0]), []);
  server.failWith = new RpcError(-32601, "Method Not Found: sessionQuery/treeChildren");
  nodes = await p.getChildren();
  assert.match(nodes[0].node.label, /no tree views/);
  server.failWith = new RpcError(-32800, "cancelled", { code: "SESSION_QUERY_ABORTED" });
  assert.deepEqual(await p.getChildren(), []);
});

test("no server, no target: empty (the welcome view shows)", async () => {
  const { p } = provider(undefined);
  assert.deepEqual(await p.getChildren(), []);
  const q = new ServerTreeProvider("t", () => corpus(), knownCommand);
  assert.deepEqual(await q.getChildren(), []);
});

test("element objects are reused across refreshes (expansion survives)", async () => {
  const server = corpus();
  const { p } = provider(server);
  const a = await p.getChildren();
  const b = await p.getChildren();
  assert.equal(a[0], b[0]);
  assert.equal(a[2], b[2]);
  server.sessions.splice(1, 1);
  const c = await p.getChildren();
  assert.equal(c.length, 2);
  assert.equal(c[1], a[2]);
  assert.equal(p.isLive(a[1]), false);
});

test("repeated ids get unique TreeItem ids", async () => {
  const server = corpus(2);
  server.sessions[1].id = server.sessions[0].id;
  const { p } = provider(server);
  const nodes = await p.getChildren();
  assert.notEqual(nodes[0].uid, nodes[1].uid);
  assert.equal(nodes[1].uid, nodes[0].uid + "#2");
});

test("getParent: loaded parents directly; reveal by id walks treeParent through 'more' pages", async () => {
  const server = corpus(7);
  server.pageSize = 3;
  const { p } = provider(server);
  const roots = await p.getChildren();
  assert.equal(roots.at(-1)?.node.contextValue, "more");
  const kids = await p.getChildren(roots[0]);
  assert.equal(await p.getParent(kids[0]), roots[0]);
  assert.equal(await p.getParent(roots[0]), undefined);
  // an event of the 7th session, never loaded: found through treeParent, then loaded top-down
  const target = `e:${JSON.stringify(["sess/6?#%", 2])}`;
  const el = await p.findById(target);
  assert.ok(el);
  assert.equal(el.node.label, "#2 assistant/message");
  const chain: string[] = [];
  for (let e: TreeElement | undefined = el; e; e = await p.getParent(e)) {
    chain.push(e.node.id);
  }
  assert.deepEqual(chain, [target, `s:${JSON.stringify("sess/6?#%")}`, "more:6", "more:3"]);
  assert.ok(server.log.some((l) => l.method === "sessionQuery/treeParent"));
  assert.equal(p.findEvent("sess/6?#%", 2), el);
  assert.equal(p.findSession("sess/6?#%")?.node.label, "sess/6?#%");
});

test("didChange for sessions re-renders only those session nodes when the siblings are the same", async () => {
  const server = corpus();
  const { p, fired } = provider(server);
  const roots = await p.getChildren();
  await p.getChildren(roots[1]);
  server.sessions[1].events.push({ type: "user/message", surface: "current" });
  fired.length = 0;
  const result = await p.refreshSessions(new Set(["sess/1?#%"]));
  assert.deepEqual(result, [roots[1]]);
  assert.deepEqual(fired, [[roots[1]]]);
  assert.equal(p.getTreeItem(roots[1]).description, "4 events");
  const kids = await p.getChildren(roots[1]);
  assert.equal(kids.length, 4);
  // a new sibling: the parent (here the roots) re-renders instead
  server.sessions.push({ id: "new", events: [] });
  server.sessions[0].events.push({ type: "user/message", surface: "current" });
  fired.length = 0;
  assert.deepEqual(await p.refreshSessions(new Set(["sess/0?#%"])), [undefined]);
  assert.deepEqual(fired, [undefined]);
  // sessions not shown: nothing to do
  fired.length = 0;
  assert.deepEqual(await p.refreshSessions(new Set(["nope"])), []);
  assert.deepEqual(fired, []);
});

test("touches(): which trees show a session", async () => {
  const server = corpus();
  const { p: ev } = provider(server, "events", { sessionId: "sess/2?#%" });
  assert.ok(ev.touches(new Set(["sess/2?#%"])));
  assert.ok(!ev.touches(new Set(["sess/1?#%"])));
  const { p } = provider(server);
  assert.ok(!p.touches(new Set(["sess/1?#%"])));
  await p.getChildren();
  assert.ok(p.touches(new Set(["sess/1?#%"])));
});

test("setTarget switches trees and drops answers for the old one", async () => {
  const server = corpus();
  const { p, fired } = provider(server, "events", { sessionId: "sess/0?#%" });
  const pending = p.getChildren();
  p.setTarget({ view: "events", args: { sessionId: "sess/1?#%" } });
  assert.deepEqual(await pending, []);
  assert.equal(fired.at(-1), undefined);
  const now = await p.getChildren();
  assert.equal(now[0].node.resource?.sessionId, "sess/1?#%");
  p.setTarget(undefined);
  assert.deepEqual(await p.getChildren(), []);
  assert.deepEqual(await p.getChildren(now[0]), []);
});

test("node kinds follow the server's contextValues", async () => {
  const { nodeKind, selectionOf } = await import("../src/tree");
  const base = { id: "x", label: "x", collapsible: "none" as const };
  const session = { ...base, contextValue: "session.live", resource: { sessionId: "s" } };
  const event = { ...base, contextValue: "event.shadowed", resource: { sessionId: "s", seq: 3 } };
  const group = { ...base, contextValue: "group.events", resource: { sessionId: "s" } };
  const traceGroup = { ...base, contextValue: "group.replacedBy", resource: { sessionId: "s", seq: 3 } };
  const unresolved = { ...base, contextValue: "lineage.unresolved", resource: { sessionId: "gone" } };
  const error = { ...base, contextValue: "error", resource: { sessionId: "s" } };
  assert.equal(nodeKind(session), "session");
  assert.equal(nodeKind(event), "event");
  assert.equal(nodeKind(group), "other");
  assert.equal(nodeKind(error), "error");
  assert.equal(nodeKind({ ...base, resource: { sessionId: "s" } }), "session");
  assert.equal(nodeKind({ ...base, resource: { sessionId: "s", seq: 0 } }), "event");
  assert.equal(nodeKind({ ...base, contextValue: "more" }), "other");
  assert.deepEqual(selectionOf(session), { sessionId: "s" });
  assert.deepEqual(selectionOf(event), { sessionId: "s", seq: 3 });
  assert.deepEqual(selectionOf(group), { sessionId: "s" });
  assert.equal(selectionOf(traceGroup), undefined);
  assert.equal(selectionOf(unresolved), undefined);
  assert.equal(selectionOf(error), undefined);
});

test("the client's own rows (unreadable sessions) come first and have no children", async () => {
  const server = corpus();
  const extra: TreeNode[] = [];
  const p = new ServerTreeProvider("t", () => server, knownCommand, { view: "sessions" }, { prepend: () => extra });
  assert.equal((await p.getChildren()).length, 3);
  extra.push({ id: "client:unreadable", label: "Show unreadable sessions (1)", collapsible: "none", icon: "warning" });
  const top = await p.getChildren();
  assert.deepEqual(
    top.map((e) => e.node.label),
    ["Show unreadable sessions (1)", ...(await p.getChildren()).slice(1).map((e) => e.node.label)],
  );
  assert.equal(top.length, 4);
  assert.deepEqual(await p.getChildren(top[0]), []);
  assert.equal(await p.getParent(top[0]), undefined);
});
