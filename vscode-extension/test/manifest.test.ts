// package.json is part of the contract: every command the code registers is contributed with the
// category, menus only name contributed commands, no server-side command id is contributed, and
// the settings the code reads exist.
import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { COMMANDS, VIEW_IDS } from "../src/ids";
import { GROUPINGS, GROUPING_SETTING } from "../src/grouping";
import { RESTART_KEYS } from "../src/settings";

/** The parts of package.json these tests read. */
interface Manifest {
  engines: { vscode: string };
  license: string;
  publisher?: string;
  repository?: unknown;
  main: string;
  activationEvents: string[];
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string }[]>;
    viewsContainers: { activitybar: unknown[] };
    views: { dshQuery: { id: string; name: string }[] };
    viewsWelcome: { view: string; contents: string; when: string }[];
    configuration: { properties: Record<string, { type?: unknown; enum?: string[] }> };
  };
}

const pkg = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8")) as Manifest;
const contributed = new Map(pkg.contributes.commands.map((c) => [c.command, c]));

test("every client command is contributed with category Session Query", () => {
  for (const id of Object.values(COMMANDS)) {
    const c = contributed.get(id);
    assert.ok(c, `${id} is contributed`);
    assert.equal(c.category, "Session Query");
    assert.ok(pkg.activationEvents.includes(`onCommand:${id}`), `${id} activates the extension`);
  }
  assert.equal(contributed.size, Object.values(COMMANDS).length);
  const titles = [...contributed.values()].map((c) => c.title);
  for (const title of [
    "Refresh",
    "Search Sessions…",
    "Search in Session…",
    "Filter Sessions…",
    "Filter Events…",
    "Trace Session",
    "Trace Event",
    "Open Event",
    "Open Surface",
    "Open Raw Log",
    "Copy Session Id",
    "Export Session…",
    "Mount Persistence…",
    "Unmount Persistence",
    "Checkpoint Now",
    "Restart Server",
    "Show Server Output",
  ]) {
    assert.ok(titles.includes(title), title);
  }
});

test("no contributed or menu command collides with the server's executeCommand ids", () => {
  for (const id of contributed.keys()) {
    assert.ok(!id.startsWith("dshQuery.server."), id);
  }
  for (const items of Object.values(pkg.contributes.menus)) {
    for (const item of items) {
      assert.ok(contributed.has(item.command), `menu names ${item.command}`);
    }
  }
});

test("the view container, its views and welcome content", () => {
  assert.deepEqual(pkg.contributes.viewsContainers.activitybar, [
    { id: "dshQuery", title: "Session Query", icon: "media/session-query.svg" },
  ]);
  const views = pkg.contributes.views.dshQuery.map((v) => [v.id, v.name]);
  assert.deepEqual(views, [
    [VIEW_IDS.sessions, "Sessions"],
    [VIEW_IDS.events, "Events"],
    [VIEW_IDS.trace, "Trace"],
  ]);
  for (const id of Object.values(VIEW_IDS)) {
    assert.ok(pkg.activationEvents.includes(`onView:${id}`));
  }
  const welcome = pkg.contributes.viewsWelcome.filter((w) => w.view === VIEW_IDS.sessions);
  assert.ok(welcome.some((w) => /not running/.test(w.contents) && /dshQuery.restartServer/.test(w.contents)));
  assert.ok(welcome.some((w) => /corpusEmpty/.test(w.when)));
});

test("settings the code reads are declared", () => {
  const props = pkg.contributes.configuration.properties;
  for (const key of [
    ...RESTART_KEYS,
    "dshQuery.readWindow.before",
    "dshQuery.readWindow.after",
    "dshQuery.search.limit",
    "dshQuery.trace.server",
  ]) {
    assert.ok(props[key], key);
  }
  assert.equal(props["dshQuery.interpreter"].type, "array");
  assert.deepEqual(props["dshQuery.trace.server"].enum, ["off", "messages", "verbose"]);
});

test("the Sessions view's grouping: a setting with the server's groupings and a toolbar command", () => {
  const prop = pkg.contributes.configuration.properties[GROUPING_SETTING];
  assert.ok(prop);
  assert.deepEqual(prop.enum, [...GROUPINGS]);
  assert.ok(!RESTART_KEYS.includes(GROUPING_SETTING), "grouping needs no restart");
  const toolbar = pkg.contributes.menus["view/title"].filter((m) => m.command === COMMANDS.groupSessions);
  assert.equal(toolbar.length, 1);
  assert.equal(contributed.get(COMMANDS.groupSessions)?.title, "Group Sessions By…");
});

test("pinned toolchain and a publishable manifest", () => {
  assert.equal(pkg.engines.vscode, "^1.90.0");
  assert.equal(pkg.license, "MIT");
  assert.ok(pkg.publisher && pkg.repository);
  assert.equal(pkg.main, "./dist/extension.js");
  assert.equal(pkg.devDependencies.typescript, "5.9.3");
  assert.match(pkg.devDependencies.esbuild, /^0\.28\.\d+$/);
  assert.match(pkg.dependencies["vscode-languageclient"], /^(9\.0\.1|11\.0\.0)$/);
  assert.ok(!/[\^~]/.test(pkg.devDependencies["@types/vscode"]));
});
