import assert from "node:assert/strict";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { runsStamp } from "../../../extension/runs/runsStamp";

// As the job writes result.json (rundir/jsonio.py): a temporary file renamed over it.
async function writeResult(runDir: string, status: string): Promise<void> {
  const tmp = path.join(runDir, ".result.json.1.2.tmp");
  await writeFile(tmp, JSON.stringify({ status }));
  await rename(tmp, path.join(runDir, "result.json"));
}

test("a run made in a terminal changes the stamp, from its first directory to its end", async () => {
  const folder = await mkdtemp(path.join(tmpdir(), "runs-stamp-"));
  const runsDir = path.join(folder, ".quickdev", "runs");
  const other = path.join(folder, "elsewhere");
  const dirs = [runsDir, other];
  const none = await runsStamp(dirs);
  assert.equal(await runsStamp(dirs), none, "nothing changed, nothing to list again");

  // The job's `mkdir -p`: the runs directory and the run's in one go.
  const run = path.join(runsDir, "20260101-000000-abcd");
  await mkdir(run, { recursive: true });
  const started = await runsStamp(dirs);
  assert.notEqual(started, none);
  await writeResult(run, "running");
  const running = await runsStamp(dirs);
  assert.notEqual(running, started);
  assert.equal(await runsStamp(dirs), running);

  await writeResult(run, "passed");
  const passed = await runsStamp(dirs);
  assert.notEqual(passed, running, "the run's end is seen");

  await rm(run, { recursive: true });
  assert.notEqual(await runsStamp(dirs), passed, "a deleted run is seen");
});

test("a file beside the runs (the journal's lock) is no run", async () => {
  const runsDir = await mkdtemp(path.join(tmpdir(), "runs-stamp-"));
  await mkdir(path.join(runsDir, "run-1"));
  const before = await runsStamp([runsDir]);
  await writeFile(path.join(runsDir, ".journal.lock"), "");
  assert.equal(await runsStamp([runsDir]), before);
});
