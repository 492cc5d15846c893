// The data layer against the real Python server (tree.py and friends), over stdio with
// vscode-jsonrpc, the transport vscode-languageclient uses. Runs when DSH_QUERY_PYTHON names a
// Python with dsh-query-server installed (tests/editors/vscode/test_vscode_extension.py sets it); skipped otherwise.
import { strict as assert } from "node:assert";
import { spawn, type ChildProcess } from "node:child_process";
import { after, before, test } from "node:test";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import * as vscode from "vscode";
import { renderTarget } from "../src/documents";
import { sessionsTarget } from "../src/grouping";
import { knownCommand } from "../src/ids";
import type { DidChangeParams, Rpc } from "../src/protocol";
import { TARGET_MARKER } from "../src/render";
import { readSettings } from "../src/settings";
import { ServerTreeProvider, nodeCommand, nodeKind, selectionOf, type TreeElement } from "../src/tree";

const python = process.env.DSH_QUERY_PYTHON;
const skip = python ? false : "DSH_QUERY_PYTHON is not set";

let proc: ChildProcess;
let conn: MessageConnection;
const changes: DidChangeParams[] = [];
const rpc: Rpc = { request: (method, params) => conn.sendRequest(method, params) };

const PARENT = "parent/1 ?#%";
const CHILD = "sub-agent «2»";
let t = 1_764_460_800_000;

function user(text: string) {
  return {
    type: "user/message",
    time: (t += 1000),
    surfaceOp: "append" as const,
    data: { id: `u${t}`, role: "user", content: [{ type: "text", text }], source: { kind: "user" } },
  };
}
function assistant(text: string) {
  return {
    type: "assistant/message",
    time: (t += 1000),
    surfaceOp: "append" as const,
    data: {
      turn: 1,
      step: 1,
      message: { id: `a${t}`, role: "assistant", content: [{ type: "text", text }], source: { kind: "model", provider: "p", model: "m" } },
    },
  };
}

before(async () => {
  if (!python) {
    return;
  }
  proc = spawn(python, ["-m", "dsh_query_server", "--persistence", "none"], { stdio: ["pipe", "pipe", "inherit"] });
  conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.onNotification("sessionQuery/didChange", (p: DidChangeParams) => changes.push(p));
  conn.listen();
  await conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: { ...readSettings({ get: () => undefined }).initializationOptions, index: ":memory:" },
  });
  await conn.sendNotification("initialized", {});
  await rpc.request("sessionStore/create", { header: { version: 0, id: PARENT, createdAt: t, cwd: "/proj" } });
  await rpc.request("sessionStore/append", {
    sessionId: PARENT,
    events: [{ type: "turn/start", time: (t += 1000), data: { turn: 1 } }, user("find the quokka migration plan"), assistant("The quokka plan is in docs/plan.md.")],
  });
  await rpc.request("sessionStore/create", {
    header: { version: 0, id: CHILD, createdAt: (t += 60_000), parentSession: PARENT, origin: "subagent", delegationDepth: 1 },
  });
  await rpc.request("sessionStore/append", { sessionId: CHILD, events: [user("read docs/plan.md"), assistant("It has 3 steps.")] });
});

after(async () => {
  if (!python) {
    return;
  }
  try {
    await conn.sendRequest("shutdown");
    await conn.sendNotification("exit");
  } catch {
    // already gone
  }
  conn.dispose();
  await new Promise<void>((resolve) => {
    if (proc.exitCode !== null) {
      resolve();
      return;
    }
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    proc.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
});

function labels(els: TreeElement[]): string[] {
  return els.map((e) => e.node.label);
}

test("sessions view: sessions, their groups, events with surface status and an open command", { skip }, async () => {
  const p = new ServerTreeProvider("sessions", () => rpc, knownCommand, { view: "sessions" });
  const roots = await p.getChildren();
  // the sub-agent is not at the top: it sits under its parent, after the parent's two groups
  assert.deepEqual(roots.map((r) => r.node.resource?.sessionId), [PARENT]);
  const parent = roots[0];
  assert.equal(parent.node.label, "find the quokka migration plan");
  const groups = await p.getChildren(parent);
  assert.deepEqual(labels(groups), ["Events", "Lineage", "read docs/plan.md"]);
  const sub = groups[2];
  assert.equal(sub.node.resource?.sessionId, CHILD);
  assert.match(sub.node.description ?? "", /^sub-agent · dsh · /);
  assert.equal(await p.getParent(sub), parent);
  for (const r of [parent, sub]) {
    assert.equal(nodeKind(r.node), "session");
    assert.match(r.node.description ?? "", /live/);
    assert.deepEqual(selectionOf(r.node), { sessionId: r.node.resource?.sessionId });
    assert.equal(p.getTreeItem(r).id, r.node.id);
  }
  assert.deepEqual(selectionOf(groups[0].node), { sessionId: PARENT });
  const events = await p.getChildren(groups[0]);
  assert.equal(events.length, 3);
  for (const e of events) {
    assert.equal(nodeKind(e.node), "event");
    assert.match(e.node.description ?? "", /^(current|shadowed|log-only)/);
    assert.deepEqual(nodeCommand(e.node, knownCommand), {
      title: "Open Event",
      command: "dshQuery.openEvent",
      arguments: [{ sessionId: PARENT, seq: e.node.resource?.seq }],
    });
  }
  assert.match(events[0].node.description ?? "", /^log-only/);
  assert.match(events[1].node.description ?? "", /^current/);
  const lineage = await p.getChildren(groups[1]);
  assert.equal(lineage.length, 1);
  assert.equal(lineage[0].node.resource?.sessionId, CHILD);
  assert.match(lineage[0].node.description ?? "", /sub-agent/);
});

test("grouped sessions view: agents, groups, and reveal through a group", { skip }, async () => {
  const CLAUDE = "claude «c1»";
  const source = { agent: "claude-code", agentVersion: "2.1.38", path: "/home/u/.claude/projects/p/c1.jsonl" };
  await rpc.request("sessionStore/create", { header: { version: 0, id: CLAUDE, createdAt: (t += 1000), cwd: "/proj", source } });
  await rpc.request("sessionStore/append", { sessionId: CLAUDE, events: [user("imported question")] });
  try {
    const plain = new ServerTreeProvider("sessions", () => rpc, knownCommand, sessionsTarget("none"));
    const roots = await plain.getChildren();
    const claude = roots.find((r) => r.node.resource?.sessionId === CLAUDE) as TreeElement;
    assert.equal(claude.node.agent, "claude-code");
    assert.equal(iconOf(plain, claude), "sparkle");
    assert.match(claude.node.description ?? "", /^claude-code · /);
    assert.ok(roots.filter((r) => r.node.resource?.sessionId !== CLAUDE).every((r) => r.node.agent === "dsh"));

    const byAgent = new ServerTreeProvider("sessions", () => rpc, knownCommand, sessionsTarget("agent"));
    const groups = await byAgent.getChildren();
    assert.deepEqual(groups.map((g) => [g.node.label, g.node.description]), [["claude-code", "1 session"], ["dsh", "1 session · 1 sub-agent"]]);
    assert.ok(groups.every((g) => nodeKind(g.node) === "other" && selectionOf(g.node) === undefined));
    const inClaude = await byAgent.getChildren(groups[0]);
    assert.deepEqual(inClaude.map((e) => e.node.resource?.sessionId), [CLAUDE]);
    assert.notEqual(inClaude[0].node.id, claude.node.id, "a grouped tree has its own ids");
    assert.equal(byAgent.findSession(CLAUDE), inClaude[0]);

    // Reveal in a fresh grouped tree: an event of a dsh session, found through treeParent.
    const dsh = await byAgent.getChildren(groups[1]);
    const [eventsGroup] = await byAgent.getChildren(dsh[0]);
    const [first] = await byAgent.getChildren(eventsGroup);
    const fresh = new ServerTreeProvider("sessions", () => rpc, knownCommand, sessionsTarget("agent"));
    const found = await fresh.findById(first.node.id);
    assert.ok(found);
    const chain: string[] = [];
    for (let e: TreeElement | undefined = found; e; e = await fresh.getParent(e)) {
      chain.push(e.node.label);
    }
    assert.deepEqual(chain, [first.node.label, "Events", dsh[0].node.label, "dsh"]);

    const byWorkspace = new ServerTreeProvider("sessions", () => rpc, knownCommand, sessionsTarget("workspace"));
    const spaces = await byWorkspace.getChildren();
    // the sub-agent (no cwd of its own) is in its parent's group, under its parent
    assert.deepEqual(spaces.map((g) => [g.node.label, g.node.description]), [["proj", "2 sessions · 1 sub-agent"]]);
  } finally {
    await rpc.request("sessionStore/remove", { sessionId: CLAUDE });
  }
});

function iconOf(provider: ServerTreeProvider, el: TreeElement): string | undefined {
  const icon = provider.getTreeItem(el).iconPath;
  return icon instanceof vscode.ThemeIcon ? icon.id : undefined;
}

test("reveal: an event never loaded is found through treeParent", { skip }, async () => {
  const loader = new ServerTreeProvider("sessions", () => rpc, knownCommand, { view: "sessions" });
  const [parent] = await loader.getChildren();
  const [eventsGroup] = await loader.getChildren(parent);
  const [, second] = await loader.getChildren(eventsGroup);
  const fresh = new ServerTreeProvider("sessions", () => rpc, knownCommand, { view: "sessions" });
  const found = await fresh.findById(second.node.id);
  assert.ok(found);
  const chain: string[] = [];
  for (let e: TreeElement | undefined = found; e; e = await fresh.getParent(e)) {
    chain.push(e.node.label);
  }
  assert.deepEqual(chain, [second.node.label, "Events", parent.node.label]);
});

test("events, lineage and eventTrace views take their args", { skip }, async () => {
  const events = new ServerTreeProvider("events", () => rpc, knownCommand, { view: "events", args: { sessionId: CHILD } });
  const evs = await events.getChildren();
  assert.equal(evs.length, 2);
  assert.ok(evs.every((e) => e.node.resource?.sessionId === CHILD));
  const lineage = new ServerTreeProvider("trace", () => rpc, knownCommand, { view: "lineage", args: { sessionId: PARENT } });
  const roots = await lineage.getChildren();
  const target = roots.at(-1) as TreeElement;
  assert.equal(target.node.resource?.sessionId, PARENT);
  assert.equal(target.node.collapsible, "expanded");
  const kids = await lineage.getChildren(target);
  assert.equal(kids[0].node.resource?.sessionId, CHILD);
  assert.match(kids[0].node.description ?? "", /sub-agent/);
  const trace = new ServerTreeProvider("trace", () => rpc, knownCommand, { view: "eventTrace", args: { sessionId: PARENT, seq: 1 } });
  const t = await trace.getChildren();
  assert.equal(t[0].node.resource?.seq, 1);
  assert.ok(t.length >= 2);
});

test("errors inside a view are error nodes", { skip }, async () => {
  const events = new ServerTreeProvider("events", () => rpc, knownCommand, { view: "events", args: { sessionId: "nope" } });
  const [err] = await events.getChildren();
  assert.equal(nodeKind(err.node), "error");
  assert.match(err.node.label, /nope/);
  assert.equal(selectionOf(err.node), undefined);
});

test("an append sends didChange; the session's node re-renders in place", { skip }, async () => {
  const p = new ServerTreeProvider("sessions", () => rpc, knownCommand, { view: "sessions" });
  const [parent] = await p.getChildren();
  const child = (await p.getChildren(parent)).find((e) => e.node.resource?.sessionId === CHILD) as TreeElement;
  await new Promise((r) => setTimeout(r, 400)); // let the debounced notice of the creates go out
  changes.length = 0;
  await rpc.request("sessionStore/append", { sessionId: CHILD, events: [user("one more thing")] });
  const deadline = Date.now() + 5000;
  while (!changes.some((c) => c.sessionIds?.includes(CHILD)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const change = changes.find((c) => c.sessionIds?.includes(CHILD));
  assert.ok(change, "didChange arrived");
  assert.equal(change.corpus, undefined, JSON.stringify(changes));
  const fired = await p.refreshSessions(new Set(change.sessionIds));
  assert.deepEqual(fired, [child]); // the nested node alone, not its parent

});

test("documents: event window, surface and log through renderTarget", { skip }, async () => {
  const settings = readSettings({ get: (k: string) => ({ "readWindow.before": 1, "readWindow.after": 1 })[k] as never });
  const w = await renderTarget(rpc, { kind: "event", sessionId: PARENT, seq: 1 }, settings);
  assert.ok(w.text.split("\n")[w.targetLine].includes(TARGET_MARKER));
  assert.match(w.text, /seq 0\.\.2, target seq 1/);
  const s = await renderTarget(rpc, { kind: "surface", sessionId: PARENT }, settings);
  assert.match(s.text, /surface order: \[1, 2\]/);
  const l = await renderTarget(rpc, { kind: "log", sessionId: PARENT }, settings);
  assert.match(l.text, /raw log: 3 event/);
});

test("search pages with nextCursor", { skip }, async () => {
  const first = await rpc.request("sessionQuery/searchSessions", { query: "QUOKKA", limit: 1 });
  assert.equal(first.items.length, 1);
  assert.equal(first.items[0].header.id, PARENT);
  assert.match(first.items[0].bestMatch.snippet, /quokka/i);
  const inside = await rpc.request("sessionQuery/searchEvents", { sessionId: PARENT, query: "quokka", limit: 1 });
  assert.equal(inside.items.length, 1);
  assert.ok(inside.nextCursor, "a second hit is on the next page");
  const next = await rpc.request("sessionQuery/searchEvents", { sessionId: PARENT, query: "quokka", limit: 1, cursor: inside.nextCursor });
  assert.equal(next.items.length, 1);
  assert.equal(next.nextCursor, undefined);
});
