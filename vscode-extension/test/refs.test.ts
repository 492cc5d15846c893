import { strict as assert } from "node:assert";
import { test } from "node:test";
import { agentOf, firstUserText, hitTitle, sessionHitDescription } from "../src/refs";
import type { SessionHeader, SessionSearchHit } from "../src/protocol";

const claude: SessionHeader = {
  version: 0,
  id: "491e126e-1e71-469c-ade2-fcc8af567c74",
  createdAt: Date.UTC(2026, 1, 10, 21, 54),
  cwd: "/home/marco/projects/spotter/",
  source: { agent: "claude-code", path: "/h/x.jsonl" },
};

test("a search hit is named by its title, cut after a word, never by its id", () => {
  assert.equal(hitTitle(claude, "File cleanup"), "File cleanup");
  const long = "Create beads (epic + tasks + dependencies) with a structured preview before execution of anything";
  const cut = hitTitle(claude, long);
  assert.ok(cut.length <= 72 && cut.endsWith("…"), cut);
  assert.ok(long.startsWith(cut.slice(0, -1)), cut);
  assert.ok(!cut.slice(0, -1).endsWith(" "), cut);
  assert.equal(hitTitle(claude, "  multi\n line  "), "multi line");
  // untitled: where it ran, not the UUID
  assert.equal(hitTitle(claude, undefined), "Untitled session in spotter");
  assert.equal(hitTitle({ ...claude, cwd: undefined }, ""), "Untitled session");
  assert.ok(!hitTitle(claude, undefined).includes(claude.id));
});

test("a session hit says the agent, the day, the match and where the session lives", () => {
  const hit: SessionSearchHit = {
    header: claude,
    live: false,
    persisted: true,
    bestMatch: { sessionId: claude.id, seq: 12, type: "user/message", time: 0, surface: "shadowed", snippet: "…" },
  };
  assert.equal(sessionHitDescription(hit), "claude-code · 2026-02-10 · #12 user/message · shadowed · persisted");
  assert.equal(agentOf({ version: 0, id: "d", createdAt: 0 }), "dsh");
  assert.equal(agentOf({ version: 0, id: "d", createdAt: 0, source: {} }), "unknown");
  const far = { ...hit, header: { ...claude, createdAt: 9e15 } };
  assert.equal(sessionHitDescription(far), "claude-code · #12 user/message · shadowed · persisted");
});

test("an untitled session is called by its first user message", () => {
  const ev = (seq: number, type: string, data: unknown) => ({ type, seq, time: 0, data });
  const events = [
    ev(0, "turn/start", { turn: 1 }),
    ev(1, "user/message", { content: [{ type: "image" }] }),
    ev(2, "user/message", { content: [{ type: "text", text: "Plan the" }, { type: "text", text: "migration" }] }),
  ];
  assert.equal(firstUserText(events), "Plan the migration");
  assert.equal(firstUserText(events.slice(0, 2)), undefined);
  assert.equal(firstUserText([ev(0, "user/message", null)]), undefined);
});
