import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type ArgumentMemory,
  joinArguments,
  lastArguments,
  rememberArguments,
  splitArguments,
} from "../../../extension/jobs/arguments";

test("arguments split as a shell splits them, without expansions", () => {
  assert.deepEqual(splitArguments("  config/train_shakespeare_char.py --dtype=float32 "), [
    "config/train_shakespeare_char.py",
    "--dtype=float32",
  ]);
  assert.deepEqual(splitArguments(`--name "my run" --note 'it''s' a\\ b ""`), [
    "--name",
    "my run",
    "--note",
    "its",
    "a b",
    "",
  ]);
  assert.deepEqual(splitArguments(`--path "C:\\\\data" --q "say \\"hi\\""`), ["--path", "C:\\data", "--q", 'say "hi"']);
  assert.deepEqual(splitArguments('--name "unclosed'), ["--name", "unclosed"]);
  assert.deepEqual(splitArguments(""), []);
});

test("joined arguments split back into the same ones", () => {
  const args = ["--name", "my run", "it's", "--lr=0.1", ""];
  assert.deepEqual(splitArguments(joinArguments(args)), args);
});

test("the last arguments are remembered per script", async () => {
  const state = new Map<string, unknown>();
  const memory: ArgumentMemory = {
    get: <T>(key: string) => state.get(key) as T | undefined,
    update: (key: string, value: unknown) => Promise.resolve(void state.set(key, value)),
  };
  assert.equal(lastArguments(memory, "/w/train.py"), undefined);
  await rememberArguments(memory, "/w/train.py", "config/a.py");
  await rememberArguments(memory, "/w/eval.py", "--split val");
  await rememberArguments(memory, "/w/train.py", "config/b.py");
  assert.equal(lastArguments(memory, "/w/train.py"), "config/b.py");
  assert.equal(lastArguments(memory, "/w/eval.py"), "--split val");
});
