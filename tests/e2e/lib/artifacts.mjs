// Where a run leaves what a person looks at afterwards: screenshots of every step, and
// code-server's logs when a step fails. Cleared at the start of each run.
import { cp, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const fixturesDir = fileURLToPath(new URL('../fixtures/', import.meta.url));
export const artifactsDir =
  process.env.QUICKDEV_E2E_ARTIFACTS ?? fileURLToPath(new URL('../artifacts/', import.meta.url));

export async function freshArtifacts() {
  await rm(artifactsDir, { recursive: true, force: true });
  await mkdir(artifactsDir, { recursive: true });
  return artifactsDir;
}

/** Copies the fixture workspace where the run may change it (launch.json edits, broken code). */
export async function copyFixtureWorkspace(toDir) {
  await cp(path.join(fixturesDir, 'workspace'), toDir, { recursive: true });
  return {
    root: toDir,
    workspaceFile: path.join(toDir, 'quickdev-e2e.code-workspace'),
    folder: (name) => path.join(toDir, name),
    /** Copies each folder's quick-dev runs (result.json, job logs, traces) next to the logs. */
    async saveRuns(logDir) {
      for (const name of await readdir(toDir)) {
        const runs = path.join(toDir, name, '.quickdev', 'runs');
        await cp(runs, path.join(logDir, `runs-${name}`), { recursive: true }).catch(() => {});
      }
    },
    /**
     * The newest runs of each folder, each with its status and its job.log's last lines: what a failed step's
     * message carries, as CI shows the message and not the saved logs.
     */
    async newestRuns(count = 3, lines = 4) {
      const told = [];
      for (const name of await readdir(toDir)) {
        const runs = path.join(toDir, name, '.quickdev', 'runs');
        const ids = (await readdir(runs).catch(() => [])).sort().slice(-count);
        for (const id of ids) {
          const read = (file) => readFile(path.join(runs, id, file), 'utf8').catch(() => '');
          const status = /"status": "(\w+)"/.exec(await read('result.json'))?.[1] ?? 'no result';
          const tail = (await read('job.log')).trimEnd().split('\n').slice(-lines);
          told.push(`    ${name}/${id} (${status}):`, ...tail.map((line) => `      ${line}`));
        }
      }
      return told.join('\n');
    },
  };
}
