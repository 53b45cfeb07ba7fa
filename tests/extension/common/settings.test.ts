import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  DEFAULT_INTERPRETER,
  EXTENSION_SETTINGS,
  SERVER_SETTINGS,
  SETTING_KEYS,
  pickInterpreter,
  resolveVariables,
  settingsFrom,
} from "../../../extension/common/settingsResolve";

const MANIFEST = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "..", "package.json"), "utf8")) as {
  engines: { vscode: string };
  devDependencies: Record<string, string>;
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: { configuration: { properties: Record<string, { type: string; default: unknown }> } };
};
const PROPERTIES = MANIFEST.contributes.configuration.properties;

const CONTEXT = {
  workspaceFolder: "/home/ada/vision",
  folders: { vision: "/home/ada/vision", text: "/home/ada/text" },
  env: { CONDA_PREFIX: "/opt/conda/envs/torch" },
  home: "/home/ada",
};

test("package.json declares exactly the settings the extension sends or uses itself, of the type it reads", () => {
  const declared = Object.keys(PROPERTIES).map((key) => key.replace(/^quickdev\./, ""));
  assert.deepEqual(declared.sort(), [...SETTING_KEYS, ...EXTENSION_SETTINGS].sort());
  for (const key of SETTING_KEYS) {
    assert.equal(PROPERTIES[`quickdev.${key}`]?.type, SERVER_SETTINGS[key], `quickdev.${key}'s declared type`);
  }
});

test("every setting package.json declares reaches the server as the user wrote it", () => {
  // VS Code's configuration: package.json's defaults, under what a person wrote in settings.json.
  const written: Record<string, unknown> = { warmStart: false, batches: 5 };
  const read = settingsFrom((key) => (key in written ? written[key] : PROPERTIES[`quickdev.${key}`]?.default));
  assert.deepEqual(Object.keys(read).sort(), [...SETTING_KEYS].sort());
  assert.equal(read.warmStart, false);
  assert.equal(read.batches, 5);
  assert.equal(read.runsDir, ".quickdev/runs");
  assert.throws(() => settingsFrom((key) => (key === "lenses" ? undefined : 1)), /no default for quickdev\.lenses/);
});

test("every setting the code reads has exactly one default, in package.json, of its declared type", () => {
  for (const key of SETTING_KEYS) {
    const property = PROPERTIES[`quickdev.${key}`];
    assert.ok(property, `package.json does not declare quickdev.${key}`);
    const actual = Array.isArray(property.default) ? "array" : typeof property.default;
    const expected = property.type === "integer" ? "number" : property.type;
    assert.equal(actual, expected, `quickdev.${key}'s default is a ${actual}`);
  }
  assert.deepEqual(PROPERTIES["quickdev.lenses"]?.default, { run: true, debug: true, profile: true, step: true });
  assert.equal(PROPERTIES["quickdev.batches"]?.default, 2);
});

test("an untrusted workspace gets limited support and cannot set the interpreter", () => {
  assert.equal(MANIFEST.capabilities.untrustedWorkspaces.supported, "limited");
  assert.deepEqual(MANIFEST.capabilities.untrustedWorkspaces.restrictedConfigurations, ["quickdev.python"]);
});

test("the manifest targets VS Code 1.100 (code-server 4.100) and its API types do not outrun it", () => {
  assert.equal(MANIFEST.engines.vscode, "^1.100.0");
  assert.equal(MANIFEST.devDependencies["@types/vscode"], "1.100.0");
});

test("variables in settings are expanded", () => {
  assert.equal(resolveVariables("${workspaceFolder}/.venv/bin/python", CONTEXT), "/home/ada/vision/.venv/bin/python");
  assert.equal(resolveVariables("${workspaceFolder:text}/runs", CONTEXT), "/home/ada/text/runs");
  assert.equal(resolveVariables("${env:CONDA_PREFIX}/bin/python", CONTEXT), "/opt/conda/envs/torch/bin/python");
  assert.equal(resolveVariables("${userHome}/py", CONTEXT), "/home/ada/py");
  assert.equal(resolveVariables("~/miniconda3/bin/python", CONTEXT), path.join("/home/ada", "miniconda3/bin/python"));
});

test("an unknown folder or variable stays visible instead of silently vanishing", () => {
  assert.equal(resolveVariables("${workspaceFolder:nope}/x", CONTEXT), "${workspaceFolder:nope}/x");
  assert.equal(resolveVariables("${command:python.interpreterPath}", CONTEXT), "${command:python.interpreterPath}");
  assert.equal(resolveVariables("${workspaceFolder}/x", { env: {} }), "${workspaceFolder}/x");
  // An unset environment variable is empty, as in VS Code's own launch.json.
  assert.equal(resolveVariables("${env:NOPE}python3", CONTEXT), "python3");
});

test("the interpreter comes from the setting, then the Python extension, then python3", () => {
  assert.deepEqual(pickInterpreter("~/venv/bin/python", "/usr/bin/python3.11", CONTEXT), {
    path: path.join("/home/ada", "venv/bin/python"),
    source: "setting",
  });
  assert.deepEqual(pickInterpreter("  ", "/opt/env/bin/python", CONTEXT), {
    path: "/opt/env/bin/python",
    source: "python-extension",
  });
  assert.deepEqual(pickInterpreter("", undefined, CONTEXT), { path: DEFAULT_INTERPRETER, source: "default" });
  assert.equal(PROPERTIES["quickdev.python"]?.default, "");
});
