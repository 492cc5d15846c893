import { strict as assert } from "node:assert";
import { test } from "node:test";
import type { SessionEvent, SessionHeader } from "../src/protocol";
import { TARGET_MARKER, clampWindow, renderError, renderEventWindow, renderSessionLog, renderSurface } from "../src/render";

const header: SessionHeader = { version: 0, id: "s/1", createdAt: 1_764_460_800_000, cwd: "/proj", parentSession: "p" };

function ev(seq: number, type = "user/message"): SessionEvent {
  return { type, seq, time: 1_764_460_800_000 + seq * 1000, data: { text: `event ${seq}`, nested: { a: [1, 2] } } };
}

/** JSONC → JSON: drop whole-line comments (the renderer writes no others). */
/** The keys the renderers write into a document's JSON. */
interface RenderedJson {
  session?: SessionHeader;
  events: SessionEvent[];
  targetSeq?: number;
  startSeq?: number;
  endSeq?: number;
  capturedThroughSeq?: number | null;
}

function parseJsonc(text: string): RenderedJson {
  return JSON.parse(
    text
      .split("\n")
      .filter((l) => !l.trimStart().startsWith("//"))
      .join("\n"),
  );
}

test("event window: valid JSONC, every event, the target marked on its line", () => {
  const events = [ev(3), ev(4, "assistant/message"), ev(5), ev(6, "tool/result")];
  const r = renderEventWindow({ session: header, target: events[2], events, startSeq: 3, endSeq: 6 }, 2, 1);
  const value = parseJsonc(r.text);
  assert.deepEqual(value.session, header);
  assert.deepEqual(value.events, events);
  assert.equal(value.targetSeq, 5);
  assert.equal(value.startSeq, 3);
  assert.equal(value.endSeq, 6);
  const lines = r.text.split("\n");
  assert.ok(lines[r.targetLine].includes(TARGET_MARKER), lines[r.targetLine]);
  assert.match(lines[r.targetLine], /seq 5 user\/message/);
  assert.match(lines[r.targetLine + 1], /^\s+\{$/);
  assert.match(lines[r.targetLine + 3], /"seq": 5/);
  assert.equal(r.text.split(TARGET_MARKER).length, 2, "exactly one marker");
  assert.match(lines[0], /seq 3\.\.6, target seq 5 \(user\/message\), before 2, after 1/);
  assert.ok(r.text.includes("// cwd /proj"));
  assert.ok(r.text.includes('// parent "p"'));
});

test("a window of one event at the end of the log", () => {
  const r = renderEventWindow({ session: header, target: ev(0), events: [ev(0)], startSeq: 0, endSeq: 0 }, 0, 0);
  assert.deepEqual(parseJsonc(r.text).events, [ev(0)]);
});

test("surface keeps surface order and says what it captured", () => {
  const events = [ev(4), ev(0), ev(7)];
  const r = renderSurface({ session: header, capturedThroughSeq: 9, events });
  const value = parseJsonc(r.text);
  assert.deepEqual(value.events.map((e: SessionEvent) => e.seq), [4, 0, 7]);
  assert.equal(value.capturedThroughSeq, 9);
  assert.match(r.text, /surface order: \[4, 0, 7\]/);
  const empty = renderSurface({ session: { version: 0, id: "e", createdAt: 0 }, capturedThroughSeq: null, events: [] });
  assert.deepEqual(parseJsonc(empty.text).events, []);
  assert.equal(parseJsonc(empty.text).capturedThroughSeq, null);
  assert.match(empty.text, /empty log/);
});

test("raw log and errors", () => {
  const r = renderSessionLog({ session: header, events: [ev(0), ev(1)] });
  assert.equal(parseJsonc(r.text).events.length, 2);
  const e = renderError("event 3", "SESSION_QUERY_EVENT_NOT_FOUND: no\nsecond line");
  assert.ok(e.text.split("\n").filter((l) => l !== "").every((l) => l.startsWith("//")));
});

test("window sizes are clamped to readWindowMax", () => {
  assert.equal(clampWindow(5, 3), 3);
  assert.equal(clampWindow(-2, 3), 0);
  assert.equal(clampWindow(2.7, 3), 2);
  assert.equal(clampWindow("x", 3), 0);
  assert.equal(clampWindow(4, 0), 0);
});
