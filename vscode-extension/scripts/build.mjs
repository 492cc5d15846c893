// esbuild: the extension into dist/extension.js (vscode external); the session page (a browser
// bundle, docs/views.md §3) into dist/session_view.js and, the same bytes, into the Python package
// (dsh_query_server/assets/session_view.js, committed, so `dsh-query export --html` needs no node);
// the Usage page into dist/usage_view.js; and with --tests each test/*.test.ts into out-test/ with `vscode` aliased to the test stub.
// --view-out=FILE writes only the session page, to FILE (tests/test_vscode_extension.py compares it
// with the committed copy).
import * as esbuild from "esbuild";
import { readdirSync, rmSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const argv = process.argv.slice(2);
const args = new Set(argv);
const production = args.has("--production");
const viewOut = argv.find((a) => a.startsWith("--view-out="))?.slice("--view-out=".length);

/** The session page: minified and without a source map whatever the mode, so that every build
 * writes the same bytes as the committed copy. */
async function buildView(entry = "src/view/main.ts") {
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2020",
    loader: { ".css": "text" },
    minify: true,
    legalComments: "eof",
    write: false,
    logLevel: "warning",
  });
  return result.outputFiles[0].contents;
}

if (viewOut) {
  writeFileSync(resolve(viewOut), await buildView());
  process.exit(0);
}

const view = await buildView();
mkdirSync(join(root, "dist"), { recursive: true });
writeFileSync(join(root, "dist", "session_view.js"), view);
writeFileSync(join(root, "..", "dsh_query_server", "assets", "session_view.js"), view);
// The Usage page (docs/usage.md §5): a second page of the same kind, for the webview only.
writeFileSync(join(root, "dist", "usage_view.js"), await buildView("src/view/usage/main.ts"));

await esbuild.build({
  absWorkingDir: root,
  entryPoints: ["src/extension.ts"],
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  outfile: "dist/extension.js",
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
});

if (args.has("--tests")) {
  const outdir = join(root, "out-test");
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const tests = readdirSync(join(root, "test")).filter((f) => f.endsWith(".test.ts"));
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: tests.map((f) => join("test", f)),
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node18",
    outdir: "out-test",
    alias: { vscode: "./test/vscode-stub.ts" },
    external: ["node:*"],
    sourcemap: "inline",
    logLevel: "warning",
  });
}
