// The session view's data side (docs/views.md §3): its rows, words and numbers, the page's HTML and
// message checks, and the HTML export's host against the real Python server: for every seq of a
// log with compactions and a tool-result rewrite, the embedded host's readSurface {throughSeq} and
// readEvent windows equal the server's. Server parts run when DSH_QUERY_PYTHON is set.
import { strict as assert } from "node:assert";
import { spawn, type ChildProcess } from "node:child_process";
import { after, before, test } from "node:test";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import type {
  SessionEvent,
  SessionEventRecord,
  SessionEventWindow,
  SessionSurfaceSnapshot,
  SessionTimeline,
  TimelineReplacement,
} from "../src/protocol.gen";
import { sessionViewHtml } from "../src/sessionView";
import { EmbeddedHost } from "../src/view/host";
import {
  chartData,
  dividerText,
  dropX,
  logRows,
  replaySurface,
  shadowedSpan,
  stepLines,
  surfaceRows,
} from "../src/view/model";
import { isViewAction, isViewMethod, packRecords, unpackRecords } from "../src/viewProtocol";

const python = process.env.DSH_QUERY_PYTHON;
const skip = python ? false : "DSH_QUERY_PYTHON is not set";

function rep(seq: number, count: number, firstSeq: number, lastSeq: number): TimelineReplacement {
  const size = { events: 1, chars: 1, approxTokens: 1 };
  return { seq, time: seq, type: "user/message", kind: "compaction", shadowed: { count, firstSeq, lastSeq }, before: size, after: size };
}

function record(seq: number, type: string, surface: SessionEventRecord["surface"]): SessionEventRecord {
  return { sessionId: "s", seq, type, time: seq, surface };
}

test("the whole log: messages, closed runs of minor events, a divider before a replacing event", () => {
  const records = [
    record(0, "turn/start", "log-only"),
    record(1, "user/message", "shadowed"),
    record(2, "assistant/chunk", "log-only"),
    record(3, "assistant/chunk", "log-only"),
    record(4, "assistant/message", "shadowed"),
    record(5, "user/message", "current"),
  ];
  const rows = logRows(records, [rep(5, 2, 1, 4)], new Set());
  assert.deepEqual(
    rows.map((r) => (r.kind === "event" ? `e${r.seq}` : r.kind === "minor" ? `m${r.seqs.join(",")}` : `d${r.rep.seq}`)),
    ["m0", "e1", "m2,3", "e4", "d5", "e5"],
  );
  const opened = logRows(records, [], new Set(["m2"]));
  assert.deepEqual(
    opened.filter((r) => r.kind === "event" && r.compact).map((r) => (r.kind === "event" ? r.seq : -1)),
    [2, 3],
  );
});

test("a surface: dividers expand into what they shadowed, nested ones included", () => {
  const reps = [rep(4, 2, 1, 2), rep(9, 2, 4, 6)];
  const closed = surfaceRows([0, 9, 7], reps, new Set(), new Map());
  assert.deepEqual(
    closed.map((r) => r.kind + (r.kind === "divider" ? r.rep.seq : r.kind === "event" ? r.seq : "")),
    ["event0", "divider9", "event9", "event7"],
  );
  const open = surfaceRows([0, 9, 7], reps, new Set([9, 4]), new Map([[9, [4, 6]], [4, [1, 2]]]));
  assert.deepEqual(
    open.map((r) => `${r.kind}${r.kind === "divider" ? r.rep.seq : r.kind === "event" ? r.seq : ""}@${r.depth}`),
    ["event0@0", "divider9@0", "divider4@1", "event1@2", "event2@2", "event4@1", "event6@1", "event9@0", "event7@0"],
  );
  assert.deepEqual(shadowedSpan([0, 4, 6, 8], rep(9, 2, 4, 6)), [4, 6]);
});

test("words and numbers people read", () => {
  assert.equal(dividerText(rep(948, 191, 7, 946)), "191 events, #7–#946, replaced by #948");
  assert.equal(dividerText(rep(9, 1, 7, 7)), "1 event, #7, replaced by #9");
  const steps = [5, 12, 40].map((seq) => ({
    seq,
    time: seq,
    turn: 1,
    step: 1,
    model: "m",
    surface: { events: 2, chars: 604012, approxTokens: 151003 },
    recorded: null,
  }));
  assert.equal(dropX(steps, rep(20, 3, 1, 4)), 2.5);
  assert.equal(dropX(steps, rep(60, 3, 1, 4)), 3.5);
  const lines = stepLines(steps[0], 0);
  assert.ok(lines.some((l) => l.includes("≈151,003 tokens (estimate)")), lines.join("\n"));
  assert.ok(lines.includes("no usage recorded for this response"));
  const timeline: SessionTimeline = {
    session: { version: 0, id: "s", createdAt: 0 },
    capturedThroughSeq: 40,
    contextWindow: null,
    steps: [{ ...steps[0], recorded: { input: 3, cacheRead: 10, cacheWrite: null, output: 1, reasoning: null, context: 13 } }, steps[1]],
    replacements: [],
    peak: null,
  };
  assert.deepEqual(chartData(timeline), [[1, 2], [13, null], [151003, 151003], [null, null]]);
});

test("the page's HTML: one script by nonce, nothing else allowed, the config escaped", () => {
  const html = sessionViewHtml(
    { sessionId: 'a"<b>', windowMax: 50, actions: [] },
    "https://file+.vscode-resource.example/dist/session_view.js",
    "https://file+.vscode-resource.example",
    "NONCE",
  );
  assert.match(html, /default-src 'none'; script-src 'nonce-NONCE'; style-src https:\/\/file\+\.vscode-resource\.example 'unsafe-inline'; img-src https:\/\/file\+\.vscode-resource\.example data:/);
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.ok(!html.includes('a"<b>'), "the id is escaped");
  assert.ok(html.includes("data-config=\"{&quot;sessionId&quot;:&quot;a\\&quot;&lt;b>&quot;"), html);
});

test("listEvents crosses into the webview as columns and comes back the same", () => {
  const records = [
    record(0, "turn/start", "log-only"),
    record(1, "user/message", "shadowed"),
    record(2, "user/message", "current"),
  ];
  const packed = packRecords("s", records);
  assert.deepEqual(packed.types, ["turn/start", "user/message"]);
  assert.equal(packed.surface, "lsc");
  assert.deepEqual(unpackRecords(JSON.parse(JSON.stringify(packed))), records);
});

test("the page may ask only for the read methods and the actions it has", () => {
  assert.ok(isViewMethod("sessionQuery/readTimeline"));
  assert.ok(!isViewMethod("sessionStore/append"));
  assert.ok(!isViewMethod("sessionPersistence/mount"));
  assert.ok(isViewAction({ action: "traceEvent", sessionId: "s", seq: 3 }));
  assert.ok(!isViewAction({ action: "traceEvent", sessionId: "s", seq: -1 }));
  assert.ok(isViewAction({ action: "openLink", href: "https://example.org" }));
  assert.ok(!isViewAction({ action: "openLink", href: "command:workbench.action.quit" }));
  assert.ok(!isViewAction({ action: "runCommand", sessionId: "s" }));
});

// ---- the HTML export's host against the server --------------------------------------------------

let proc: ChildProcess;
let conn: MessageConnection;
const request = <R>(method: string, params: object) => conn.sendRequest(method, params) as Promise<R>;

function text(type: string, body: string, op: unknown = "append", src?: number[]) {
  const message = { id: `m${body}`, role: type === "user/message" ? "user" : "assistant", content: [{ type: "text", text: body }] };
  const data =
    type === "user/message"
      ? { ...message, source: { kind: "user" } }
      : { turn: 1, step: 1, message: { ...message, source: { kind: "model", provider: "p", model: "m" } } };
  return { type, time: 1, data, surfaceOp: op, ...(src ? { sourceEventSeqs: src } : {}) };
}

function result(body: string, op: unknown = "append", src?: number[]) {
  const block = { type: "tool-result", toolCallId: "c1", content: [{ type: "text", text: body }] };
  const data = { turn: 1, step: 1, message: { id: "r1", role: "user", content: [block], source: { kind: "tool", callId: "c1" } } };
  return { type: "tool/result", time: 1, data, surfaceOp: op, ...(src ? { sourceEventSeqs: src } : {}) };
}

before(async () => {
  if (!python) {
    return;
  }
  proc = spawn(python, ["-m", "dsh_query_server", "--persistence", "none"], { stdio: ["pipe", "pipe", "inherit"] });
  conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.listen();
  await conn.sendRequest("initialize", { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: { index: ":memory:" } });
  await conn.sendNotification("initialized", {});
  await request("sessionStore/create", { header: { version: 0, id: "v", createdAt: 0 } });
  await request("sessionStore/append", {
    sessionId: "v",
    events: [
      text("user/message", "hello"), // 0
      text("assistant/message", "hi"), // 1
      { type: "step/start", time: 1, data: { turn: 1, step: 1 } }, // 2
      result("out"), // 3
      text("user/message", "more"), // 4
      result("out, shorter", { op: "replace", start: 3, end: 3 }, [3]), // 5: a middle rewrite
      text("assistant/message", "sure"), // 6
      text("user/message", "Summary", { op: "replace", start: 1, end: 5 }, [1, 4, 5]), // 7
      text("assistant/message", "ok"), // 8
      text("user/message", "again", { op: "replace", start: 0, end: 7 }, [0, 7]), // 9
    ],
  });
});

after(async () => {
  if (!python) {
    return;
  }
  conn.dispose();
  proc.kill();
});

test("the export's host answers readSurface and readEvent as the server does", { skip }, async () => {
  const params = { sessionId: "v" };
  const events = (await request<{ events: SessionEvent[] }>("sessionQuery/readSession", params)).events;
  const host = new EmbeddedHost({
    config: { sessionId: "v", windowMax: 2, actions: [] },
    session: { version: 0, id: "v", createdAt: 0 },
    timeline: await request<SessionTimeline>("sessionQuery/readTimeline", params),
    records: await request<SessionEventRecord[]>("sessionQuery/listEvents", params),
    events,
  });
  for (let through = 0; through < events.length; through++) {
    const server = await request<SessionSurfaceSnapshot>("sessionQuery/readSurface", { ...params, throughSeq: through });
    const local = await host.request<SessionSurfaceSnapshot>("sessionQuery/readSurface", { ...params, throughSeq: through });
    assert.deepEqual(local.events, server.events, `through ${through}`);
    assert.deepEqual(replaySurface(events, through), server.events.map((e) => e.seq));
    const window = { ...params, seq: through, before: 2, after: 2 };
    const a = await request<SessionEventWindow>("sessionQuery/readEvent", window);
    const b = await host.request<SessionEventWindow>("sessionQuery/readEvent", window);
    assert.deepEqual([b.startSeq, b.endSeq, b.events], [a.startSeq, a.endSeq, a.events]);
  }
  const now = await host.request<SessionSurfaceSnapshot>("sessionQuery/readSurface", params);
  assert.deepEqual(
    now.events.map((e) => e.seq),
    (await request<SessionSurfaceSnapshot>("sessionQuery/readSurface", params)).events.map((e) => e.seq),
  );
  await assert.rejects(host.request("sessionQuery/readEvent", { ...params, seq: events.length }), /no event/);
});
