import { strict as assert } from "node:assert";
import { test } from "node:test";
import { parseEventFilters, parseRange, parseSessionFilters, parseTime, searchableEventFilters, tokenize } from "../src/filters";

test("tokenize keeps quoted parts and escapes", () => {
  assert.deepEqual(tokenize(' a  "b c" cwd:"/my dir" "q\\"z\\\\" '), ["a", "b c", "cwd:/my dir", 'q"z\\']);
  assert.deepEqual(tokenize(""), []);
  assert.throws(() => tokenize('"open'), /unterminated/);
});

test("time bounds: epoch ms, UTC days, ISO times", () => {
  assert.equal(parseTime("1764460800000", false), 1764460800000);
  assert.equal(parseTime("2025-11-30", false), Date.UTC(2025, 10, 30));
  assert.equal(parseTime("2025-11-30", true), Date.UTC(2025, 10, 30) + 86_400_000 - 1);
  assert.equal(parseTime("2025-11-30T10:00:00Z", false), Date.UTC(2025, 10, 30, 10));
  assert.throws(() => parseTime("yesterday", false), /bad time/);
  assert.deepEqual(parseRange("2025-11-30..", true), { from: Date.UTC(2025, 10, 30) });
  assert.deepEqual(parseRange("..5", false), { to: 5 });
  assert.deepEqual(parseRange("3", false), { from: 3, to: 3 });
  assert.throws(() => parseRange("9..3", false), /empty range/);
});

test("session filters", () => {
  assert.deepEqual(parseSessionFilters(""), { filters: [] });
  assert.deepEqual(parseSessionFilters('live cwd:/a cwd:"/b c" cwd:- root parent:p1 id:x created:2025-11-30..').filters, [
    { kind: "availability", values: ["live"] },
    { kind: "id", values: ["x"] },
    { kind: "cwd", values: ["/a", "/b c", null] },
    { kind: "parent", values: [null, "p1"] },
    { kind: "created-at", from: Date.UTC(2025, 10, 30) },
  ]);
  assert.deepEqual(parseSessionFilters("is:live,persisted").filters, [{ kind: "availability", values: ["live", "persisted"] }]);
  assert.match(parseSessionFilters("bogus").error ?? "", /unknown term/);
  assert.match(parseSessionFilters("colour:red").error ?? "", /unknown filter/);
  assert.match(parseSessionFilters("is:dead").error ?? "", /availability/);
  assert.match(parseSessionFilters("created:2025-12-01..2025-11-01").error ?? "", /empty range/);
});

test("event filters: surfaces, types, ranges, and words as one text clause", () => {
  const { filters, error } = parseEventFilters('current surface:shadowed type:user/message,tool/result seq:2..9 fake clock text:"a  b"');
  assert.equal(error, undefined);
  assert.deepEqual(filters, [
    { kind: "surface", values: ["current", "shadowed"] },
    { kind: "type", values: ["user/message", "tool/result"] },
    { kind: "seq", from: 2, to: 9 },
    { kind: "text", text: "fake clock a  b" },
  ]);
  assert.deepEqual(parseEventFilters("").filters, []);
  assert.deepEqual(parseEventFilters("http://x.y/z").filters, [{ kind: "text", text: "http://x.y/z" }]);
  assert.match(parseEventFilters("surface:gone").error ?? "", /surface/);
  assert.deepEqual(searchableEventFilters(filters).map((f) => f.kind), ["surface", "type", "seq"]);
});
