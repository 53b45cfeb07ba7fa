// What the Runs view's poll compares between two looks at the runs directories. No vscode import.
import type { Stats } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import * as path from "node:path";

// The file whose replacement ends a run (rundir/layout.py RESULT_FILE).
const RESULT_FILE = "result.json";

/**
 * A stamp of the runs under `runsDirs`: equal stamps, nothing for the view to show anew. It
 * changes when a run directory appears or goes, or a file in one is made or replaced (the job
 * writes its JSON files by rename, which changes the directory's mtime), and with result.json
 * itself. A runs directory that is missing stamps as such, so its first run is seen too.
 */
export async function runsStamp(runsDirs: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    runsDirs.map(async (dir) => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
      if (!entries) {
        return `${dir}: none`;
      }
      const runs = await Promise.all(
        entries
          .filter((entry) => entry.isDirectory())
          .map(async (entry) => {
            const runDir = path.join(dir, entry.name);
            const [dirStat, result] = await Promise.all([
              stat(runDir).catch(() => undefined),
              stat(path.join(runDir, RESULT_FILE)).catch(() => undefined),
            ]);
            return `${entry.name} ${stamp(dirStat)} ${stamp(result)}`;
          }),
      );
      return [`${dir}:`, ...runs.sort()].join("\n");
    }),
  );
  return parts.join("\n");
}

function stamp(stats: Stats | undefined): string {
  return stats ? `${stats.mtimeMs}/${stats.ino}/${stats.size}` : "-";
}
