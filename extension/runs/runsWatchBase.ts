// Where the Runs view's file watcher is rooted. No vscode import.
import * as path from "node:path";

/**
 * VS Code watches a folder that exists when the watcher starts; a runs directory usually does
 * not yet (no run so far), and a watcher on it then never reports the first run. A runs
 * directory inside its workspace folder is therefore watched from the folder, by a pattern
 * below it; one elsewhere from itself (it exists once any job has used it).
 */
export function watchBase(
  runsDir: string,
  folder: string,
  exists: (dir: string) => boolean,
): { base: string; pattern: string } {
  if (exists(runsDir)) {
    return { base: runsDir, pattern: "**" };
  }
  const relative = path.relative(folder, runsDir);
  if (relative && !relative.startsWith("..") && !path.isAbsolute(relative)) {
    return { base: folder, pattern: `${relative.split(path.sep).join("/")}/**` };
  }
  return { base: runsDir, pattern: "**" };
}
