// Starts and stops a fresh code-server (a real VS Code in the browser) for one test run.
//
// Every run gets its own user-data, extensions and config directories, so nothing from an earlier
// run or from the person's own VS Code leaks in, and it listens on 127.0.0.1 on a port the
// system picks.
import { execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const repoRoot = path.resolve(import.meta.dirname, '..', '..', '..');
export const codeServerBin =
  process.env.QUICKDEV_CODE_SERVER ??
  path.join(repoRoot, '.tools', 'code-server', 'node_modules', '.bin', 'code-server');

const STARTUP_DEADLINE_MS = 60_000;

// Quiet, reproducible defaults: no welcome page, tips, update checks or telemetry.
const BASE_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'git.enabled': false,
  'files.autoSave': 'off',
};

/**
 * A code-server process with its own directories.
 * `logFile` receives its stdout and stderr; `userDataDir/logs` holds VS Code's own logs.
 */
export class CodeServer {
  constructor({ baseDir, userDataDir, extensionsDir, child, url, logFile }) {
    Object.assign(this, { baseDir, userDataDir, extensionsDir, child, url, logFile });
  }

  /** The URL that opens `target` (a folder, or a .code-workspace file) in the workbench. */
  urlFor(target) {
    const key = target.endsWith('.code-workspace') ? 'workspace' : 'folder';
    return `${this.url}?${key}=${encodeURIComponent(target)}`;
  }

  /** Copies VS Code's logs (extension host, output channels) next to the run's artifacts. */
  async saveLogs(toDir) {
    await mkdir(toDir, { recursive: true });
    await cp(path.join(this.userDataDir, 'logs'), path.join(toDir, 'vscode-logs'), {
      recursive: true,
    }).catch(() => {});
    await cp(this.logFile, path.join(toDir, path.basename(this.logFile))).catch(() => {});
  }

  /** The command lines of every process code-server has started that is still running. */
  async processes() {
    const { stdout } = await run('ps', ['-eo', 'pgid=,args=']);
    return stdout
      .split('\n')
      .map((line) => line.trim().match(/^(\d+)\s+(.*)$/))
      .filter((match) => match && Number(match[1]) === this.child.pid)
      .map((match) => match[2]);
  }

  /** Ends code-server and every process it started (extension host, language server, jobs). */
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      try {
        process.kill(-this.child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-this.child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    // A server may start long-lived helpers (TensorBoard) in their own session; they still name
    // this run's directories on their command line.
    const { stdout } = await run('ps', ['-eo', 'pid=,args=']);
    for (const line of stdout.split('\n')) {
      const match = line.trim().match(/^(\d+)\s+(.*)$/);
      if (match && match[2].includes(this.baseDir) && Number(match[1]) !== process.pid) {
        try {
          process.kill(Number(match[1]), 'SIGTERM');
        } catch {
          // already gone
        }
      }
    }
  }

  async removeDirs() {
    await rm(this.baseDir, { recursive: true, force: true });
  }
}

/**
 * Starts code-server with `settings` as the user settings and, when given, `vsix` installed.
 * `logDir` receives code-server's own output.
 */
export async function startCodeServer({ settings = {}, vsix, logDir, name = 'code-server' }) {
  const baseDir = await mkdtemp(path.join(tmpdir(), 'quickdev-e2e-'));
  const userDataDir = path.join(baseDir, 'user-data');
  const extensionsDir = path.join(baseDir, 'extensions');
  await mkdir(extensionsDir, { recursive: true });
  // code-server is VS Code's remote setup: settings scoped `machine`/`machine-overridable` (an
  // interpreter path) are read from the Machine settings, the others from the User settings.
  for (const scope of ['User', 'Machine']) {
    await mkdir(path.join(userDataDir, scope), { recursive: true });
    await writeFile(
      path.join(userDataDir, scope, 'settings.json'),
      JSON.stringify({ ...BASE_SETTINGS, ...settings }, null, 2),
    );
  }
  // code-server writes a config file under XDG_CONFIG_HOME; keep it out of the person's home.
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: path.join(baseDir, 'config'),
    XDG_DATA_HOME: path.join(baseDir, 'data'),
    // The server's own account (why a job started cold, …) in the Quickdev log the artifacts keep.
    QUICKDEV_LOG_LEVEL: 'info',
  };
  const dirs = ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir];

  if (vsix) {
    await run(codeServerBin, ['--install-extension', vsix, ...dirs], { env }).catch((error) => {
      throw new Error(`code-server could not install ${vsix}: ${error.stderr || error.message}`);
    });
  }

  await mkdir(logDir, { recursive: true });
  const logFile = path.join(logDir, `${name}.log`);
  const log = createWriteStream(logFile);
  const child = spawn(
    codeServerBin,
    [
      '--auth', 'none',
      '--bind-addr', '127.0.0.1:0',
      '--disable-telemetry',
      '--disable-update-check',
      ...dirs,
    ],
    // Its own process group, so stop() ends everything it started and nothing else.
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.pipe(log);
  child.stderr.pipe(log);

  const url = await new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () =>
        reject(
          new Error(`code-server did not listen within ${STARTUP_DEADLINE_MS} ms; see ${logFile}`),
        ),
      STARTUP_DEADLINE_MS,
    );
    child.stdout.on('data', (chunk) => {
      seen += chunk;
      const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${code} before listening; see ${logFile}`));
    });
  });
  return new CodeServer({ baseDir, userDataDir, extensionsDir, child, url, logFile });
}
