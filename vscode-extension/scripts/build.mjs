// esbuild: the extension into dist/extension.js (vscode external), and with --tests each
// test/*.test.ts into out-test/ with `vscode` aliased to the test stub.
import * as esbuild from "esbuild";
import { readdirSync, rmSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));
const production = args.has("--production");

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
