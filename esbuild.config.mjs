// Bundles the extension into one file so the VSIX needs no node_modules.
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");
// Source maps while developing (F5 or --watch); the VSIX goes without them.
const sourcemap = watch || process.argv.includes("--sourcemap");

const options = {
  entryPoints: ["extension/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  // Provided by the editor at run time.
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  // jsonc-parser's UMD build requires its parts at run time, which a bundle cannot follow; its
  // ES module build bundles cleanly.
  mainFields: ["module", "main"],
  target: "node20",
  sourcemap,
  minify: !sourcemap,
  logLevel: "info",
};

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
