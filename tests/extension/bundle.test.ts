import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import Module from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";

// `make ext-check` builds dist/ first. The VSIX ships no node_modules, so the bundle must load
// on its own: a copy outside the repository cannot fall back on our node_modules.
const BUNDLE = path.join(__dirname, "..", "..", "..", "dist", "extension.js");

test("the bundle loads without node_modules (what the VSIX ships)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "quickdev-bundle-"));
  const copy = path.join(dir, "extension.js");
  copyFileSync(BUNDLE, copy);
  // Only the editor's API is absent outside VS Code; a stand-in whose every member is a
  // constructible function is enough to load (nothing is called).
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const original = loader._load;
  loader._load = function (request: string, ...rest: unknown[]) {
    return request === "vscode" ? new Proxy({}, { get: () => function () {} }) : original.call(this, request, ...rest);
  };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the bundle is CommonJS, loaded through the patched loader above
    const loaded = require(copy) as { activate?: unknown; deactivate?: unknown };
    assert.equal(typeof loaded.activate, "function");
    assert.equal(typeof loaded.deactivate, "function");
  } finally {
    loader._load = original;
    rmSync(dir, { recursive: true, force: true });
  }
});
