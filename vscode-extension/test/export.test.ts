// "Export Session…" proposes dsh-session-<seg>.zip, with the segment rule of tools.md §2.3.
import { strict as assert } from "node:assert";
import { test } from "node:test";
import { exportSegment } from "../src/commands";

test("each UTF-16 code unit outside [A-Za-z0-9_-] becomes an underscore", () => {
  assert.equal(exportSegment("team/a b"), "team_a_b");
  assert.equal(exportSegment("a/b😀"), "a_b__");
  assert.equal(exportSegment("s-root_1"), "s-root_1");
});
