// The Runs view's groups: one per workspace folder (in the folders' order), runs newest first
// inside each. No vscode import.
import type { RunSummary } from "../server/protocol";

export interface RunGroup {
  /** The folder's name; "" for runs of scripts outside every folder. */
  folder: string;
  runs: RunSummary[];
}

/** `runs` newest first already; `folderOf` names a script's folder, undefined when none. */
export function groupByFolder(
  runs: readonly RunSummary[],
  folders: readonly string[],
  folderOf: (script: string) => string | undefined,
): RunGroup[] {
  const groups = new Map<string, RunSummary[]>(folders.map((name) => [name, []]));
  for (const run of runs) {
    const name = folderOf(run.script) ?? "";
    groups.set(name, [...(groups.get(name) ?? []), run]);
  }
  return [...groups]
    .filter(([, members]) => members.length > 0)
    .map(([folder, members]) => ({ folder, runs: members }));
}
