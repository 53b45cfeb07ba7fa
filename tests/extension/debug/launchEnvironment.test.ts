import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import type { QuickdevConfiguration } from "../../../extension/debug/configuration";
import { startJobArgs } from "../../../extension/debug/launchArgs";
import { mergeEnvironment, parseEnvFile } from "../../../extension/common/environment";

const MANIFEST = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "..", "package.json"), "utf8")) as {
  contributes: {
    breakpoints: { language: string }[];
    debuggers: { configurationAttributes: { launch: { properties: Record<string, unknown>; required?: string[] } } }[];
  };
};

const launch: QuickdevConfiguration = { type: "quickdev", request: "launch", name: "train" };

test("Python breakpoints can be set with only this extension installed", () => {
  assert.deepEqual(MANIFEST.contributes.breakpoints, [{ language: "python" }]);
});

test("the attributes Python users write are declared, so VS Code flags none of them", () => {
  const declared = Object.keys(MANIFEST.contributes.debuggers[0].configurationAttributes.launch.properties);
  for (const name of ["program", "args", "cwd", "env", "envFile", "python", "justMyCode", "console"]) {
    assert.ok(declared.includes(name), `${name} is not declared`);
  }
  for (const name of [
    "module",
    "mode",
    "batches",
    "maxSteps",
    "timeout",
    "device",
    "nproc",
    "profile",
    "findNonfinite",
  ]) {
    assert.ok(declared.includes(name), `${name} is not declared`);
  }
  // "program", "script" or "module" names what runs: none may be required on its own.
  assert.equal(MANIFEST.contributes.debuggers[0].configurationAttributes.launch.required, undefined);
});

test(".env files read as the Python extension reads them", () => {
  const text = [
    "# a comment",
    "export DATA=/data/mnist",
    "PYTHONPATH=${DATA}/src:${HOME}",
    'QUOTED="two\\nlines" ',
    "LITERAL='${DATA} stays'",
    "TRAILING=value # a comment",
    "not a line",
    "",
  ].join("\r\n");
  assert.deepEqual(parseEnvFile(text, { HOME: "/home/ada" }), {
    DATA: "/data/mnist",
    PYTHONPATH: "/data/mnist/src:/home/ada",
    QUOTED: "two\nlines",
    LITERAL: "${DATA} stays",
    TRAILING: "value",
  });
});

test("a configuration's env goes over the file's; null removes a variable; bad values are named", () => {
  assert.deepEqual(mergeEnvironment({ A: "1", B: "2" }, { B: "3", A: null, C: 4 }), { env: { B: "3", C: "4" } });
  assert.deepEqual(mergeEnvironment({ A: "1" }, undefined), { env: { A: "1" } });
  assert.match((mergeEnvironment({}, ["A=1"]) as { error: string }).error, /"env" must be an object/);
  assert.match((mergeEnvironment({}, { A: { x: 1 } }) as { error: string }).error, /"env.A" must be a string/);
});

test("a launch configuration becomes the startJob argument, env, limits and all", () => {
  const args = startJobArgs(
    {
      ...launch,
      program: "/w/train.py",
      args: "--lr 0.1  --epochs 3",
      env: { WANDB_MODE: "offline" },
      cwd: "/w",
      maxSteps: 5,
      timeout: 30,
      device: "cpu",
      justMyCode: true,
      console: "integratedTerminal",
    },
    { PYTHONPATH: "/w/src" },
  );
  assert.deepEqual(args, {
    script: "/w/train.py",
    mode: "debug",
    env: { PYTHONPATH: "/w/src", WANDB_MODE: "offline" },
    cwd: "/w",
    args: ["--lr", "0.1", "--epochs", "3"],
    maxSteps: 5,
    timeout: 30,
    device: "cpu",
  });
  assert.equal((startJobArgs({ ...launch, script: "/w/t.py", profile: true }, {}) as { mode: string }).mode, "profile");
  // A string of arguments splits as a shell would: a quoted argument keeps its spaces.
  const quoted = startJobArgs({ ...launch, program: "/w/t.py", args: `--comment "two words" --tag 'a b'` }, {});
  assert.deepEqual((quoted as { args: string[] }).args, ["--comment", "two words", "--tag", "a b"]);
  // The NaN hunt: a debug launch that stops where the first NaN/Inf was made.
  assert.deepEqual(startJobArgs({ ...launch, script: "/w/t.py", findNonfinite: true }, {}), {
    script: "/w/t.py",
    mode: "debug",
    env: {},
    findNonfinite: true,
  });
  assert.equal(
    (startJobArgs({ ...launch, script: "/w/t.py", mode: "run", profile: true }, {}) as { mode: string }).mode,
    "run",
  );
  // "memoryForecast": true is this machine's GPU (else the setting's devices); a string names them.
  const forecast = (value: boolean | string) =>
    (startJobArgs({ ...launch, script: "/w/t.py", memoryForecast: value }, {}) as { memoryForecast?: string })
      .memoryForecast;
  assert.equal(forecast(true), "auto");
  assert.equal(forecast("24,h100"), "24,h100");
  assert.equal(forecast(false), undefined);
});

test("a module launch configuration runs the module as python -m does, from its cwd", () => {
  assert.deepEqual(startJobArgs({ ...launch, module: "pkg.train", cwd: "/w", args: ["--lr", "0.1"] }, {}), {
    module: "pkg.train",
    mode: "debug",
    env: {},
    cwd: "/w",
    args: ["--lr", "0.1"],
  });
});

test("a launch configuration the job cannot run answers one line", () => {
  assert.match((startJobArgs(launch, {}) as { error: string }).error, /has no "program" \(or "module"\)/);
  assert.match(
    (startJobArgs({ ...launch, module: "pkg.train", program: "/w/pkg/train.py" }, {}) as { error: string }).error,
    /names both "module" and "program"/,
  );
  assert.match(
    (
      startJobArgs({ ...launch, program: "/w/t.py", env: { A: [1] } } as unknown as QuickdevConfiguration, {}) as {
        error: string;
      }
    ).error,
    /"env.A"/,
  );
});
