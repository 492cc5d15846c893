// The Sessions view's grouping: the setting read leniently, the tree it asks the server for.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { GROUPINGS, groupingDescription, isGrouping, readGrouping, sessionsTarget } from "../src/grouping";

test("the setting: none, agent or workspace; anything else is none", () => {
  const reader = (value: unknown) => ({ get: <T>(key: string) => (key === "sessions.groupBy" ? (value as T) : undefined) });
  assert.equal(readGrouping(reader("agent")), "agent");
  assert.equal(readGrouping(reader("workspace")), "workspace");
  assert.equal(readGrouping(reader("none")), "none");
  for (const bad of [undefined, null, "", "Agent", 3, ["agent"]]) {
    assert.equal(readGrouping(reader(bad)), "none", String(bad));
  }
  assert.deepEqual([...GROUPINGS], ["none", "agent", "workspace"]);
  assert.ok(GROUPINGS.every(isGrouping) && !isGrouping("cwd"));
});

test("ungrouped asks for the plain sessions tree (its ids unchanged); a grouping goes in args", () => {
  assert.deepEqual(sessionsTarget("none"), { view: "sessions" });
  assert.deepEqual(sessionsTarget("agent"), { view: "sessions", args: { groupBy: "agent" } });
  assert.deepEqual(sessionsTarget("workspace"), { view: "sessions", args: { groupBy: "workspace" } });
  assert.equal(groupingDescription("none"), undefined);
  assert.equal(groupingDescription("agent"), "by agent");
  assert.equal(groupingDescription("workspace"), "by workspace");
});
