// Extension figures in a real VS Code (code-server): activation time (code loading plus
// activate(), as the extension logs it), language server start, the workbench's own load time
// beside it, and the VSIX size. Needs `make vsix` and the e2e tools (`make code-server`,
// tests/e2e/node_modules). Usage: node benchmarks/extension.mjs [--runs N]
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const e2eLib = path.join(repo, 'tests', 'e2e', 'lib');
const { startCodeServer } = await import(path.join(e2eLib, 'codeServer.mjs'));
const { copyFixtureWorkspace } = await import(path.join(e2eLib, 'artifacts.mjs'));
const { launchBrowser, Workbench } = await import(path.join(e2eLib, 'workbench.mjs'));

const runsArg = process.argv.indexOf('--runs');
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 1;
const version = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).version;
const vsix = path.join(repo, 'dist', `torch-quickdev-${version}.vsix`);
const python = path.join(repo, '.venv', 'bin', 'python');
if (!existsSync(vsix)) {
  console.error(`no ${path.relative(repo, vsix)}; run 'make vsix' first`);
  process.exit(2);
}

async function findFile(dir, name) {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name === name) return path.join(entry.parentPath ?? entry.path, entry.name);
  }
  return undefined;
}

/** Polls the extension's log until both lines are there, or fails at the deadline. */
async function figuresFromLog(userDataDir, deadlineMs = 90_000) {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const log = await findFile(path.join(userDataDir, 'logs'), 'Torch Quickdev.log');
    const text = log ? await readFile(log, 'utf8') : '';
    const activation = /activated in ([\d.]+) ms/.exec(text);
    const server = /language server ready in ([\d.]+) ms/.exec(text);
    if (activation && server) return { activationMs: Number(activation[1]), serverMs: Number(server[1]) };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the extension did not log its activation and server start within ${deadlineMs} ms`);
}

async function once(index) {
  const logDir = path.join(tmpdir(), `quickdev-bench-${process.pid}-${index}`);
  const server = await startCodeServer({
    name: 'bench',
    logDir,
    vsix,
    settings: { 'quickdev.python': python, 'security.workspace.trust.enabled': false },
  });
  const browser = await launchBrowser();
  try {
    const workspace = await copyFixtureWorkspace(path.join(server.baseDir, 'workspace'));
    const started = performance.now();
    await Workbench.open(browser, server.urlFor(workspace.workspaceFile), path.join(logDir, 'shots'));
    const workbenchMs = performance.now() - started;
    return { workbenchMs, ...(await figuresFromLog(server.userDataDir)) };
  } finally {
    await browser.close();
    await server.stop();
    await server.removeDirs();
    await rm(logDir, { recursive: true, force: true });
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = [];
for (let index = 0; index < runs; index += 1) {
  const result = await once(index);
  results.push(result);
  console.log(
    `run ${index + 1}: activation ${result.activationMs.toFixed(0)} ms, language server ready ` +
      `${result.serverMs.toFixed(0)} ms, workbench ready ${result.workbenchMs.toFixed(0)} ms`,
  );
}
const activation = median(results.map((r) => r.activationMs));
const workbench = median(results.map((r) => r.workbenchMs));
const sizeMb = statSync(vsix).size / 1024 / 1024;
console.log(`VSIX ${path.relative(repo, vsix)}: ${sizeMb.toFixed(2)} MB`);
console.log(`language server ready (median): ${median(results.map((r) => r.serverMs)).toFixed(0)} ms`);
console.log(
  `activation ${activation.toFixed(0)} ms / workbench ready ${workbench.toFixed(0)} ms = ` +
    `${(activation / workbench).toFixed(2)} (median of ${runs}); VSIX ${sizeMb.toFixed(2)} MB`,
);
