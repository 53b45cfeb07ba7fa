import assert from "node:assert/strict";
import { test } from "node:test";
import type { RunSummary } from "../../../extension/server/protocol";
import { describeRun, endMessage, runLabel } from "../../../extension/runs/runFormat";

const started = "2026-01-02T03:04:05.000Z";
const run = (fields: Partial<RunSummary>): RunSummary => ({
  runId: "r1",
  script: "/w/train.py",
  args: [],
  mode: "run",
  status: "running",
  started,
  runDir: "/w/.quickdev/runs/r1",
  resultFile: "",
  outputFile: "",
  durationS: 0.3,
  batches: 0,
  losses: [],
  changes: [],
  verdict: [],
  ...fields,
});

test("a live run's elapsed time moves with the clock between the server's reports", () => {
  const live = run({ steps: 2 });
  const at = (seconds: number): string => describeRun(live, Date.parse(started) + seconds * 1000);
  assert.equal(at(8), "running · 8.0 s · 0 batches · 2 steps");
  assert.equal(at(10), "running · 10.0 s · 0 batches · 2 steps");
  // A finished run keeps the duration the job measured, whenever it is looked at.
  const done = run({ status: "passed", durationS: 12.34 });
  assert.equal(describeRun(done, Date.parse(started) + 60_000), "passed · 12.3 s · 0 batches");
});

test("runs of one script that differ only in their arguments read differently", () => {
  const plain = runLabel(run({}));
  const withConfig = runLabel(run({ args: ["config/train_shakespeare_char.py", "--dtype=float32"] }));
  assert.notEqual(plain, withConfig);
  assert.match(withConfig, /^train\.py config\/train_shakespeare_char\.py --dtype=float32 \(run\) /);
  const long = runLabel(run({ args: ["--comment", "a very long comment that goes on and on and on and on and on"] }));
  assert.match(long, /^train\.py --comment 'a very long comment that goes on and on and on a… \(run\)/);
});

test("a run started just after midnight is labelled 00:mm:ss, not 24:mm:ss", () => {
  const midnight = new Date(2026, 10, 28, 0, 6, 3).toISOString();
  assert.match(runLabel(run({ started: midnight })), / 00:06:03$/);
});

test("a run that ended with Quickdev's own error says what failed and what the script did", () => {
  const verdict = [
    "Quickdev's own error, not your code's: the profiler failed (AttributeError: no is_python_function)",
    "your script ran to its end (2 training steps)",
  ];
  const message = endMessage(run({ status: "error", verdict }));
  assert.equal(message, `Quickdev: train.py error: ${verdict[0]}; ${verdict[1]}`);
});
