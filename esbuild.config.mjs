// Bundles the extension into one file so the VSIX needs no node_modules.
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");

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
  // Source maps only while developing: they would double the VSIX for no user benefit.
  sourcemap: watch,
  minify: !watch,
  logLevel: "info",
};

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
