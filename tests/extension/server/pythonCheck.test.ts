import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { PROBE, findings, parseReport, pipInstallCommand } from "../../../extension/server/pythonCheck";

const REPORT = {
  version: [3, 11] as [number, number],
  executable: "/env/bin/python",
  torch: "2.13.0",
  tensorboard: true,
  torchTbProfiler: true,
};

test("the probe runs in a real interpreter and reports what it has", () => {
  // python3 from PATH: the project's own checks run with it.
  const report = parseReport(execFileSync("python3", ["-c", PROBE], { encoding: "utf8" }));
  assert.equal(report.version[0], 3);
  assert.ok(report.executable.length > 0);
  assert.equal(typeof report.tensorboard, "boolean");
});

test("a complete interpreter needs no message", () => {
  assert.deepEqual(findings("/env/bin/python", REPORT), []);
});

test("without torch the message carries the install command", () => {
  const [finding] = findings("/my env/bin/python", { ...REPORT, torch: null });
  assert.equal(finding?.kind, "noTorch");
  assert.equal((finding as { command: string }).command, "'/my env/bin/python' -m pip install torch");
  assert.match(finding?.message ?? "", /torch is not installed in \/my env\/bin\/python\. Install it with: /);
});

test("missing profiling packages are offered with the project's pins", () => {
  const result = findings("python3", { ...REPORT, tensorboard: false, torchTbProfiler: false });
  assert.equal(result.length, 1);
  assert.equal(result[0]?.kind, "noProfiler");
  assert.equal(
    (result[0] as { command: string }).command,
    "python3 -m pip install tensorboard==2.21.0 torch-tb-profiler==0.4.3",
  );
  const onlyPlugin = findings("python3", { ...REPORT, torchTbProfiler: false });
  assert.equal((onlyPlugin[0] as { command: string }).command, "python3 -m pip install torch-tb-profiler==0.4.3");
});

test("an interpreter older than 3.10 is refused with the fix", () => {
  const [finding] = findings("/usr/bin/python3", { ...REPORT, version: [3, 8] });
  assert.equal(finding?.kind, "tooOld");
  assert.match(finding?.message ?? "", /3\.10 or newer.*quickdev\.python/);
});

test("shell quoting survives spaces and quotes", () => {
  assert.equal(
    pipInstallCommand("C:/Program Files/py's/python", ["x"]),
    "'C:/Program Files/py'\\''s/python' -m pip install x",
  );
});

test("the status bar names the environment the jobs run in", async () => {
  const { interpreterLabel } = await import("../../../extension/server/pythonCheck");
  assert.equal(interpreterLabel("/home/me/nanoGPT/.venv/bin/python", "3.11"), ".venv (3.11)");
  assert.equal(interpreterLabel("/opt/conda/envs/torch/bin/python3"), "torch");
  assert.equal(interpreterLabel("/usr/bin/python3", "3.12"), "python3 (3.12)");
  assert.equal(interpreterLabel("/usr/local/bin/python3.11"), "python3.11");
  assert.equal(interpreterLabel("python3"), "python3");
  assert.equal(interpreterLabel("C:\\envs\\ml\\Scripts\\python.exe"), "ml");
});
