import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CURRENT_FILE_DEFAULT,
  SESSION_OPTIONS,
  type QuickdevConfiguration,
  adapterAddress,
  attachToPicked,
  attachToStartedJob,
  isEmpty,
} from "../../../extension/debug/configuration";
import { fromAdapter, fromEditor } from "../../../extension/debug/sessionMessages";

const stepLaunch: QuickdevConfiguration = {
  type: "quickdev",
  request: "launch",
  name: "Quickdev: debug train.py",
  mode: "debug",
  script: "/w/train.py",
  cwd: "/w",
  quickdevTemporaryBreakpoint: "bp-1",
};

test("F5 with no launch.json debugs the current file", () => {
  assert.ok(isEmpty({ type: "", request: "", name: "" }));
  assert.ok(!isEmpty(stepLaunch));
  assert.deepEqual(
    { type: CURRENT_FILE_DEFAULT.type, request: CURRENT_FILE_DEFAULT.request, script: CURRENT_FILE_DEFAULT.script },
    { type: "quickdev", request: "launch", script: "${file}" },
  );
});

test("a debug launch becomes an attach to its job that stops it and keeps the step's breakpoint", () => {
  const attach = attachToStartedJob(stepLaunch, "run-7", { host: "127.0.0.1", port: 50123 });
  assert.deepEqual(attach, {
    type: "quickdev",
    name: "Quickdev: debug train.py",
    request: "attach",
    connect: { host: "127.0.0.1", port: 50123 },
    ...SESSION_OPTIONS,
    quickdevRunId: "run-7",
    quickdevTemporaryBreakpoint: "bp-1",
  });
  // The adapter factory talks to the job's own debugpy there.
  assert.deepEqual(adapterAddress(attach), { host: "127.0.0.1", port: 50123 });
});

test("an attach to a picked process detaches on stop, never cancels", () => {
  const picked = attachToPicked(
    { type: "quickdev", request: "attach", name: "Quickdev: Attach to Running Job" },
    { host: "127.0.0.1", port: 6001, label: "train.py (run-3)" },
  );
  assert.equal(picked.name, "Quickdev: Attach to Running Job: train.py (run-3)");
  assert.deepEqual(picked.connect, { host: "127.0.0.1", port: 6001 });
  assert.equal(picked.justMyCode, false);
  // The script's output in the Debug Console, Quickdev's frames out of the call stack.
  assert.equal(picked.redirectOutput, true);
  assert.deepEqual(picked.rules, SESSION_OPTIONS.rules);
  assert.equal(picked.quickdevRunId, undefined);
});

test("the adapter has an address only for an attach that names a port", () => {
  assert.equal(adapterAddress(stepLaunch), undefined);
  assert.equal(adapterAddress({ type: "quickdev", request: "attach", name: "a" }), undefined);
  assert.deepEqual(adapterAddress({ type: "quickdev", request: "attach", name: "a", connect: { port: 5678 } }), {
    host: "127.0.0.1",
    port: 5678,
  });
});

test("the session tracker tells a breakpoint stop, the debuggee's end and the user's stop apart", () => {
  assert.deepEqual(fromAdapter({ type: "event", event: "stopped", body: { reason: "breakpoint", threadId: 4 } }), {
    kind: "stoppedAtBreakpoint",
    threadId: 4,
  });
  assert.equal(fromAdapter({ type: "event", event: "stopped", body: { reason: "step", threadId: 4 } }), undefined);
  assert.deepEqual(fromAdapter({ type: "event", event: "terminated" }), { kind: "debuggeeEnded" });
  assert.deepEqual(fromAdapter({ type: "event", event: "exited" }), { kind: "debuggeeEnded" });
  assert.equal(fromAdapter({ type: "response", command: "disconnect" }), undefined);
  assert.deepEqual(fromEditor({ type: "request", command: "disconnect" }), { kind: "userDisconnects" });
  assert.equal(fromEditor({ type: "request", command: "continue" }), undefined);
});
