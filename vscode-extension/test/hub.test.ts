// The extension's way to the hub (hub.md §3) against the real Python: `hub ensure` through the
// CLI (with the options in DSH_QUERY_HUB_OPTIONS), then vscode-jsonrpc over the Unix socket, the
// transport vscode-languageclient uses. Two connections stand for two windows: a session one
// creates is live for the other. Runs when DSH_QUERY_PYTHON is set; the hub is stopped after.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { connectSocket, ensureHub, type HubStatus } from "../src/hub";
import { hubLaunch, readSettings } from "../src/settings";

const python = process.env.DSH_QUERY_PYTHON;
const skip = python ? false : "DSH_QUERY_PYTHON is not set";
const options = { persistence: null, index: ":memory:", readWindowMax: 50 };
let status: HubStatus;
let home: string;
const connections: MessageConnection[] = [];

before(() => {
  if (!python) {
    return;
  }
  // A private world for the hub this test starts (a short run directory: socket paths are short).
  home = fs.mkdtempSync(path.join(os.tmpdir(), "dqv-"));
  fs.chmodSync(home, 0o700);
  process.env.XDG_RUNTIME_DIR = home;
  process.env.XDG_STATE_HOME = path.join(home, "state");
  process.env.XDG_CACHE_HOME = path.join(home, "cache");
});

async function open(): Promise<MessageConnection> {
  const socket = await connectSocket(status.socket);
  const conn = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
  conn.listen();
  connections.push(conn);
  const result = (await conn.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: options })) as {
    capabilities: { experimental?: { sessionQuery?: { version?: number } } };
  };
  assert.equal(result.capabilities.experimental?.sessionQuery?.version, 1);
  await conn.sendNotification("initialized", {});
  return conn;
}

test("hub ensure starts one hub and names its socket; a second ensure finds the same", { skip }, async () => {
  const launch = hubLaunch(readSettings({ get: () => undefined }), [python!]);
  status = await ensureHub(launch, options, os.tmpdir());
  assert.match(status.key, /^[0-9a-f]{16}$/);
  assert.ok(status.socket.startsWith(path.join(process.env.XDG_RUNTIME_DIR!, "dsh-query")));
  assert.equal((fs.statSync(status.socket).mode & 0o777).toString(8), "600");
  const again = await ensureHub(launch, options, os.tmpdir());
  assert.equal(again.pid, status.pid);
});

test("two windows on one hub: a session one creates is live for the other", { skip }, async () => {
  const first = await open();
  const second = await open();
  const changed = new Promise<unknown>((resolve) => second.onNotification("sessionQuery/didChange", resolve));
  await first.sendRequest("sessionStore/create", { header: { version: 0, id: "made-in-window-1", createdAt: 1 } });
  const listed = (await second.sendRequest("sessionQuery/listSessions", {})) as { header: { id: string }; live: boolean }[];
  assert.deepEqual(
    listed.map((r) => [r.header.id, r.live]),
    [["made-in-window-1", true]],
  );
  assert.deepEqual(await changed, { sessionIds: ["made-in-window-1"], corpus: true });
});

test("another configuration is refused with the hub's message", { skip }, async () => {
  const socket = await connectSocket(status.socket);
  const conn = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
  conn.listen();
  connections.push(conn);
  await assert.rejects(
    conn.sendRequest("initialize", { processId: null, rootUri: null, capabilities: {}, initializationOptions: { ...options, readWindowMax: 7 } }),
    /this hub serves another configuration; connect to hub [0-9a-f]{16}/,
  );
});

test("ensure fails with the CLI's reason", { skip }, async () => {
  const launch = hubLaunch(readSettings({ get: () => undefined }), [python!]);
  await assert.rejects(ensureHub(launch, { ...options, readWindowMax: -1 }, os.tmpdir()), /readWindowMax must be an integer >= 0/);
});

after(async () => {
  if (!python) {
    return;
  }
  if (!status) {
    fs.rmSync(home, { recursive: true, force: true });
    return;
  }
  const conn = connections[0];
  await conn.sendRequest("hub/stop", {});
  for (const c of connections) {
    c.dispose();
  }
  const deadline = Date.now() + 20_000;
  while (fs.existsSync(status.socket) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  fs.rmSync(home, { recursive: true, force: true });
});
