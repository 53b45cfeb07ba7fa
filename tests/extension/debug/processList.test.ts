import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isPythonCommand,
  listPythonProcesses,
  parseCmdline,
  parsePs,
  pythonProcesses,
} from "../../../extension/debug/processList";

// As `ps -axo pid=,args=` prints it on Linux and macOS: right-aligned PIDs, full command lines.
const PS = [
  "    1 /sbin/init splash",
  "  812 /usr/bin/python3 /usr/bin/networkd-dispatcher --run-startup-triggers",
  " 4242 /home/me/.venv/bin/python -m quickdev run --no-limits train.py -- --lr 0.1",
  " 4300 /home/me/.venv/bin/python3.11 -m quickdev serve",
  " 4301 /home/me/.venv/bin/python /ext/bundled/libs/debugpy/adapter",
  " 5000 node /usr/lib/code-server/out/node/entry.js",
  " 5100 /opt/conda/envs/torch/bin/python3.12 finetune.py --epochs 90",
  " 5200 /usr/bin/pythonista-not-python --flag",
  "",
].join("\n");

test("ps output: one process a line, PID and the whole command line", () => {
  const parsed = parsePs(PS);
  assert.equal(parsed.length, 8);
  assert.deepEqual(parsed[2], {
    pid: 4242,
    command: "/home/me/.venv/bin/python -m quickdev run --no-limits train.py -- --lr 0.1",
  });
});

test("only Python processes, newest first, without the language server, debug adapters or excluded PIDs", () => {
  const shown = pythonProcesses(parsePs(PS), new Set([812]));
  assert.deepEqual(
    shown.map((p) => p.pid),
    [5100, 4242],
  );
});

test("what counts as a Python program", () => {
  for (const command of [
    "python",
    "python3 x.py",
    "/usr/bin/python3.11 -c pass",
    "C:\\Py\\python.exe a.py",
    "pythonw",
  ]) {
    assert.ok(isPythonCommand(command), command);
  }
  for (const command of ["node app.js", "/usr/bin/pythonista", "bash -c python", "ipython3", ""]) {
    assert.ok(!isPythonCommand(command), command);
  }
});

test("/proc cmdline: NUL-separated arguments", () => {
  assert.equal(
    parseCmdline("/usr/bin/python3\0-m\0quickdev\0run\0train.py\0"),
    "/usr/bin/python3 -m quickdev run train.py",
  );
  assert.equal(parseCmdline(""), "");
});

test("lists a real Python process running on this machine", async () => {
  const { spawn } = await import("node:child_process");
  const child = spawn("python3", ["-c", "import time; time.sleep(60)"], { stdio: "ignore" });
  try {
    const deadline = Date.now() + 10_000;
    let found = false;
    while (!found && Date.now() < deadline) {
      found = (await listPythonProcesses(new Set())).some((p) => p.pid === child.pid);
      if (!found) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(found, `PID ${child.pid} not listed`);
    const own = await listPythonProcesses(new Set([child.pid ?? -1]));
    assert.ok(!own.some((p) => p.pid === child.pid), "an excluded PID was listed");
  } finally {
    child.kill();
  }
});
