import assert from "node:assert/strict";
import { test } from "node:test";
import type { RunSummary } from "../../../extension/server/protocol";
import { groupByFolder } from "../../../extension/runs/runGroups";

const run = (runId: string, script: string): RunSummary => ({
  runId,
  script,
  args: [],
  mode: "run",
  status: "passed",
  started: "",
  runDir: "",
  resultFile: "",
  outputFile: "",
  durationS: 0,
  batches: 0,
  losses: [],
  changes: [],
  verdict: [],
});

test("runs group by folder in the folders' order, newest first within, empty folders left out", () => {
  const runs = [
    run("3", "/w/text/train.py"),
    run("2", "/tmp/x.py"),
    run("1", "/w/vision/train.py"),
    run("0", "/w/text/eval.py"),
  ];
  const folderOf = (script: string): string | undefined => /^\/w\/(\w+)\//.exec(script)?.[1];
  const groups = groupByFolder(runs, ["vision", "text", "audio"], folderOf);
  assert.deepEqual(
    groups.map((g) => [g.folder, g.runs.map((r) => r.runId)]),
    [
      ["vision", ["1"]],
      ["text", ["3", "0"]],
      ["", ["2"]],
    ],
  );
});
