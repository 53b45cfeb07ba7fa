import assert from "node:assert/strict";
import { test } from "node:test";
import { isError, isFinished, parseLensArgument } from "../../../extension/server/protocol";
import { describeRun, endMessage } from "../../../extension/runs/runFormat";

test("lens arguments as the server sends them", () => {
  assert.deepEqual(parseLensArgument({ script: "/w/train.py" }), {
    script: "/w/train.py",
    file: undefined,
    line: undefined,
  });
  assert.deepEqual(parseLensArgument({ script: "/w/train.py", file: "/w/model.py", line: 0 }), {
    script: "/w/train.py",
    file: "/w/model.py",
    line: 0,
  });
  // A script that runs only as python -m: the module and the folder to run it from come along.
  assert.deepEqual(parseLensArgument({ script: "/w/src/pkg/train.py", module: "pkg.train", cwd: "/w/src" }), {
    script: "/w/src/pkg/train.py",
    module: "pkg.train",
    cwd: "/w/src",
    file: undefined,
    line: undefined,
  });
  assert.equal(parseLensArgument({ script: "/w/pkg/train.py", module: "pkg.train" }), undefined);
  assert.equal(parseLensArgument({ script: "" }), undefined);
  assert.equal(parseLensArgument({ script: "/w/t.py", line: -2 }), undefined);
  assert.equal(parseLensArgument(["/w/t.py"]), undefined);
});

test("an error answer is recognised, a result is not", () => {
  assert.ok(isError({ error: "script x not found; save it to disk first" }));
  assert.ok(!isError({ runId: "r1", runDir: "/w/.quickdev/runs/r1" }));
  assert.ok(isFinished("cancelled") && !isFinished("running"));
});

test("a run reads as the user would say it", () => {
  const run = {
    runId: "r1",
    script: "/w/train.py",
    args: [],
    mode: "run" as const,
    status: "passed" as const,
    started: "2026-01-02T03:04:05+00:00",
    runDir: "/w/.quickdev/runs/r1",
    resultFile: "/w/.quickdev/runs/r1/result.json",
    outputFile: "/w/.quickdev/runs/r1/output.log",
    durationS: 3.21,
    batches: 6,
    losses: [2.3, 1.98761],
    changes: [],
    verdict: [],
  };
  assert.equal(describeRun(run), "passed · 3.2 s · 6 batches · loss 1.9876");
  // A running job's progress says what it is doing; a finished one's stage is history.
  const at = Date.parse(run.started) + 3210;
  assert.equal(
    describeRun({ ...run, status: "running", stage: "validate" }, at),
    "running · validate · 3.2 s · 6 batches · loss 1.9876",
  );
  // The job's stage "running" is no news next to the status.
  assert.equal(
    describeRun({ ...run, status: "running", stage: "running" }, at),
    "running · 3.2 s · 6 batches · loss 1.9876",
  );
  assert.equal(describeRun({ ...run, stage: "validate" }), "passed · 3.2 s · 6 batches · loss 1.9876");
  // A loss that went NaN arrives as null (JSON has no NaN), and is said.
  assert.equal(
    describeRun({ ...run, status: "failed", losses: [2.1, null] }),
    "failed · 3.2 s · 6 batches · loss NaN/Inf",
  );
  assert.equal(
    endMessage({
      ...run,
      status: "failed",
      error: { message: "RuntimeError: shape mismatch", file: "/w/model.py", line: 12 },
    }),
    "Quickdev: train.py failed at model.py:12: RuntimeError: shape mismatch",
  );
  // What the job changed is in the message the editor shows at the end, as in the terminal.
  const changes = [
    "one epoch: --epochs set to 1 (pass it explicitly to keep your value)",
    "stopped: train_passes (1 pass(es) over the training loader; --train-passes changes it)",
  ];
  assert.equal(
    endMessage({ ...run, status: "stopped", changes }),
    `Quickdev: train.py stopped · 3.2 s · 6 batches · loss 1.9876 — ${changes.join("; ")}`,
  );
  // A forecast run ends with the forecast's one line, as the lens shows it.
  assert.equal(
    endMessage({ ...run, memoryForecast: "≈ 11.2 GB peak · fits 24 GB" }),
    "Quickdev: train.py passed · 3.2 s · 6 batches · loss 1.9876 — memory forecast ≈ 11.2 GB peak · fits 24 GB",
  );
  // A forecast that could not be made says so once, not "memory forecast no memory forecast".
  assert.equal(
    endMessage({ ...run, memoryForecast: "no memory forecast: the job stopped before its first step" }),
    "Quickdev: train.py passed · 3.2 s · 6 batches · loss 1.9876 — no memory forecast: the job stopped before its first step",
  );
});
