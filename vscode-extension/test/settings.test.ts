import { strict as assert } from "node:assert";
import { test } from "node:test";
import { StderrTail, describeError, formatError, isCancellation, isMethodNotFound } from "../src/errors";
import { availability, refFromArgs } from "../src/refs";
import { RESTART_KEYS, hubLaunch, needsRestart, readSettings, serverLaunch, usesHub } from "../src/settings";

const reader = (values: Record<string, unknown>) => ({ get: <T>(k: string) => values[k] as T | undefined });

test("defaults: server-default persistence and index, readWindowMax 50", () => {
  const s = readSettings(reader({}));
  assert.deepEqual(s.initializationOptions, { readWindowMax: 50 });
  assert.deepEqual([s.before, s.after, s.searchLimit], [3, 3, 20]);
  assert.deepEqual(serverLaunch(s, []), { command: "python3", args: ["-m", "dsh_query_server"] });
  assert.deepEqual(serverLaunch(s, ["/py/bin/python"]), { command: "/py/bin/python", args: ["-m", "dsh_query_server"] });
});

test("settings become initializationOptions and the command line", () => {
  const s = readSettings(
    reader({
      interpreter: ["/usr/bin/env", "python3.11"],
      serverArgs: ["--demo"],
      persistence: " jsonl:/data/sessions ",
      index: ":memory:",
      "readWindow.max": 4,
      "readWindow.before": 10,
      "readWindow.after": 2,
      "search.limit": 500,
    }),
  );
  assert.deepEqual(s.initializationOptions, { readWindowMax: 4, persistence: "jsonl:/data/sessions", index: ":memory:" });
  assert.deepEqual([s.before, s.after, s.searchLimit], [4, 2, 100]);
  assert.deepEqual(serverLaunch(s, ["ignored"]), {
    command: "/usr/bin/env",
    args: ["python3.11", "-m", "dsh_query_server", "--demo"],
  });
  assert.equal(readSettings(reader({ persistence: "none" })).initializationOptions.persistence, null);
  assert.equal(readSettings(reader({ persistence: null })).initializationOptions.persistence, null);
  assert.equal("persistence" in readSettings(reader({ persistence: "" })).initializationOptions, false);
  assert.deepEqual(readSettings(reader({ interpreter: "/opt/py" })).interpreter, ["/opt/py"]);
});

test("the hub: on by default, found through the CLI, off for a private server's flags", () => {
  const s = readSettings(reader({ interpreter: ["/usr/bin/env", "python3.11"], serverArgs: ["--checkpoint", "manual"] }));
  assert.equal(s.hub, true);
  assert.ok(usesHub(s, "linux"));
  assert.ok(!usesHub(s, "win32")); // no Unix sockets
  assert.deepEqual(hubLaunch(s, ["ignored"]), {
    command: "/usr/bin/env",
    args: ["python3.11", "-m", "dsh_query_server.cli", "hub", "ensure", "--checkpoint", "manual"],
  });
  assert.deepEqual(hubLaunch(readSettings(reader({})), ["/py"]), {
    command: "/py",
    args: ["-m", "dsh_query_server.cli", "hub", "ensure"],
  });
  assert.ok(!usesHub(readSettings(reader({ hub: false })), "linux"));
  assert.ok(!usesHub(readSettings(reader({ serverArgs: ["--demo"] })), "linux"));
  assert.ok(!usesHub(readSettings(reader({ serverArgs: ["--tcp=127.0.0.1:7777"] })), "linux"));
  assert.ok(needsRestart((k) => k === "dshQuery.hub"));
});

test("which changes restart the server", () => {
  assert.ok(needsRestart((k) => k === "dshQuery.persistence"));
  assert.ok(needsRestart((k) => k === "dshQuery.interpreter"));
  assert.ok(!needsRestart((k) => k === "dshQuery.search.limit"));
  assert.ok(!needsRestart((k) => k === "dshQuery.readWindow.before"));
  assert.ok(RESTART_KEYS.includes("dshQuery.serverArgs"));
});

test("errors: data.code first, then the message", () => {
  const err = Object.assign(new Error('session "x" not found'), { code: -32803, data: { code: "SESSION_QUERY_SESSION_NOT_FOUND" } });
  assert.equal(formatError(err), 'SESSION_QUERY_SESSION_NOT_FOUND: session "x" not found');
  assert.deepEqual(describeError(err), { code: -32803, message: 'session "x" not found', dataCode: "SESSION_QUERY_SESSION_NOT_FOUND" });
  assert.equal(formatError(new Error("plain")), "plain");
  assert.equal(formatError("text"), "text");
  assert.match(formatError({ code: -32601, message: "Unhandled method x" }), /does not support/);
  assert.ok(isMethodNotFound({ code: -32601, message: "" }));
  assert.ok(isCancellation({ code: -32800, message: "" }));
  assert.ok(isCancellation({ code: 1, message: "", data: { code: "SESSION_QUERY_ABORTED" } }));
});

test("stderr tail names the reason a server failed", () => {
  const t = new StderrTail(200);
  assert.equal(t.reason(), undefined);
  t.push("Traceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'dsh_query_server'\n\n");
  assert.equal(t.reason(), "ModuleNotFoundError: No module named 'dsh_query_server'");
});

test("command arguments: tree elements, nodes, resources, records, positional", () => {
  assert.deepEqual(refFromArgs([{ node: { resource: { sessionId: "a", seq: 3 } } }]), { sessionId: "a", seq: 3 });
  assert.deepEqual(refFromArgs([{ resource: { sessionId: "a" } }]), { sessionId: "a" });
  assert.deepEqual(refFromArgs([{ sessionId: "a", seq: 0 }]), { sessionId: "a", seq: 0 });
  assert.deepEqual(refFromArgs([{ header: { id: "h" }, live: true, persisted: false }]), { sessionId: "h" });
  assert.deepEqual(refFromArgs(["a", 7]), { sessionId: "a", seq: 7 });
  assert.deepEqual(refFromArgs([{ sessionId: "a", seq: -1 }]), { sessionId: "a" });
  assert.equal(refFromArgs([]), undefined);
  assert.equal(refFromArgs([42]), undefined);
  assert.equal(availability({ live: true, persisted: true }), "live + persisted");
  assert.equal(availability({ live: false, persisted: true }), "persisted");
});

test("the tail keeps only the newest text", () => {
  const t = new StderrTail(10);
  t.push("aaaaaaaaaaaaaaaaaaaa\nlast");
  assert.equal(t.reason(), "last");
  t.clear();
  assert.equal(t.reason(), undefined);
});
