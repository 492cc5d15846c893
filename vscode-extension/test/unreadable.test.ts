// Unreadable sessions in the Sessions view: the badge, the "Show unreadable sessions" row and
// its tooltip (the only place in the tree that names the damaged files).
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { UnreadableSessions, reason, unreadableNode } from "../src/unreadable";

const BAD = {
  sessionId: "bad",
  code: "SESSION_QUERY_CORRUPT_SESSION",
  message: "corrupt session log: unparsable committed event at line 2 (/r/p/bad/session.jsonl)",
  path: "/r/p/bad/session.jsonl",
};

test("the row says how many, names each file in its tooltip and runs the command", () => {
  assert.equal(unreadableNode([], 0), undefined);
  const node = unreadableNode([BAD], 3);
  assert.ok(node);
  assert.equal(node.label, "Show unreadable sessions (3)");
  assert.equal(node.icon, "warning");
  assert.equal(node.command?.command, "dshQuery.showUnreadable");
  assert.equal(
    node.tooltip,
    "3 unreadable sessions, left out of the list or the search:\n" +
      "bad: corrupt session log: unparsable committed event at line 2\n    /r/p/bad/session.jsonl\n" +
      "… and 2 more",
  );
  assert.equal(reason(BAD), "corrupt session log: unparsable committed event at line 2");
  assert.equal(reason({ ...BAD, path: undefined, message: "no file" }), "no file");
});

test("the badge follows the status, and a search adds what it found", () => {
  const view: { badge?: { value: number; tooltip: string } } = {};
  const tracker = new UnreadableSessions();
  tracker.attach(view);
  tracker.note({ unreadable: [BAD], unreadableCount: 1 }, true);
  assert.deepEqual(view.badge, { value: 1, tooltip: "1 unreadable session" });
  const other = { ...BAD, sessionId: "other", path: "/r/p/other/session.jsonl" };
  tracker.note({ unreadable: [BAD, other], unreadableCount: 2 });
  assert.equal(view.badge?.value, 2);
  tracker.note({}, true); // repaired
  assert.equal(view.badge, undefined);
  assert.equal(tracker.node(), undefined);
});
