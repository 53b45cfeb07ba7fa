import assert from "node:assert/strict";
import { appendFile, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { FileTail } from "../../../extension/jobs/fileTail";

test("a tail hands out each appended piece once, a split character once whole", async () => {
  const file = path.join(await mkdtemp(path.join(tmpdir(), "tail-")), "output.log");
  const tail = new FileTail(file);
  assert.equal(await tail.read(), "", "no file yet");
  await writeFile(file, "epoch 0: loss 2.3\n");
  assert.equal(await tail.read(), "epoch 0: loss 2.3\n");
  assert.equal(await tail.read(), "");
  const arrow = Buffer.from("→", "utf8");
  await appendFile(file, Buffer.concat([Buffer.from("cuda:0 "), arrow.subarray(0, 1)]));
  assert.equal(await tail.read(), "cuda:0 ");
  await appendFile(file, Buffer.concat([arrow.subarray(1), Buffer.from(" cpu\n")]));
  assert.equal(await tail.read(), "→ cpu\n");
  const both = await Promise.all([tail.read(), appendFile(file, "x").then(() => tail.read())]);
  assert.equal(both.join(""), "x");
});
