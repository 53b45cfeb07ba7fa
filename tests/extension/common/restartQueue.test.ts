import assert from "node:assert/strict";
import { test } from "node:test";
import { RestartQueue } from "../../../extension/common/restartQueue";

test("restarts never overlap and a burst of requests collapses into one more restart", async () => {
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  let release: (() => void) | undefined;
  const queue = new RestartQueue(async () => {
    running += 1;
    runs += 1;
    maxRunning = Math.max(maxRunning, running);
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    running -= 1;
  });
  const first = queue.request();
  const burst = [queue.request(), queue.request(), queue.request()];
  release?.();
  // The second restart starts once the first has finished.
  while (runs < 2) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  release?.();
  await Promise.all([first, ...burst]);
  assert.equal(maxRunning, 1);
  assert.equal(runs, 2);
});

test("a failing restart does not stop later ones", async () => {
  let calls = 0;
  const queue = new RestartQueue(() => {
    calls += 1;
    return calls === 1 ? Promise.reject(new Error("interpreter missing")) : Promise.resolve();
  });
  await queue.request();
  await queue.request();
  assert.equal(calls, 2);
});

test("settled waits for the restart in progress, and is immediate when idle", async () => {
  let finished = false;
  let release: (() => void) | undefined;
  const queue = new RestartQueue(async () => {
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    finished = true;
  });
  await queue.settled();
  void queue.request();
  const settled = queue.settled().then(() => finished);
  release?.();
  assert.equal(await settled, true);
});

test("a restart knows when a newer one overtook it, so its messages are not shown", async () => {
  const seen: boolean[] = [];
  let release: (() => void) | undefined;
  const queue = new RestartQueue(async () => {
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    seen.push(queue.overtaken);
  });
  const first = queue.request();
  await new Promise((resolve) => setImmediate(resolve));
  const second = queue.request(); // the settings changed while the first restart checked
  release?.();
  while (seen.length < 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setImmediate(resolve));
  release?.();
  await Promise.all([first, second]);
  assert.deepEqual(seen, [true, false]);
});
