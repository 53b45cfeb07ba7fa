import assert from "node:assert/strict";
import { test } from "node:test";
import { watchBase } from "../../../extension/runs/runsWatchBase";

test("a runs directory not made yet is watched from its folder, so the first run is seen", () => {
  const none = (): boolean => false;
  assert.deepEqual(watchBase("/w/text/.quickdev/runs", "/w/text", none), {
    base: "/w/text",
    pattern: ".quickdev/runs/**",
  });
});

test("an existing runs directory, or one outside the folder, is watched from itself", () => {
  assert.deepEqual(
    watchBase("/w/text/.quickdev/runs", "/w/text", () => true),
    { base: "/w/text/.quickdev/runs", pattern: "**" },
  );
  assert.deepEqual(
    watchBase("/data/runs", "/w/text", () => false),
    { base: "/data/runs", pattern: "**" },
  );
});
