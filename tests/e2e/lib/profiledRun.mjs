import { readdir } from 'node:fs/promises';
import path from 'node:path';

/** The id of the run under `runsDir` that holds a profiler trace, if there is one. */
export async function profiledRun(runsDir) {
  for (const run of await readdir(runsDir).catch(() => [])) {
    const files = await readdir(path.join(runsDir, run), { recursive: true }).catch(() => []);
    if (files.some((file) => /\.pt\.trace\.json(\.gz)?$/.test(file))) return run;
  }
  return undefined;
}
