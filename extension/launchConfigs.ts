// The configurations "Generate Launch Configurations" adds. No vscode import.
import { DEBUG_TYPE } from "./debug/configuration";
import type { Compound, DebugConfiguration, LaunchAdditions } from "./launchEdits";

export const CURRENT_FILE = "Python: Current File (all code)";
export const COMPOUND = "Quickdev: debug all entry scripts";
export const ATTACH_TO_RUNNING_JOB = "Quickdev: Attach to Running Job";

/** Works with the Python Debugger extension; the quick-dev ones below need no other extension. */
function currentFile(): DebugConfiguration {
  return {
    name: CURRENT_FILE,
    type: "debugpy",
    request: "launch",
    program: "${file}",
    console: "integratedTerminal",
    justMyCode: false,
  };
}

function quickdev(name: string, mode: "debug" | "profile", script: string, cwd: string): DebugConfiguration {
  return {
    name,
    type: DEBUG_TYPE,
    request: "launch",
    mode,
    script,
    cwd,
    justMyCode: false,
  };
}

/** Without an address: starting it shows the picker of running jobs and Python processes. */
function attachToRunningJob(): DebugConfiguration {
  return {
    name: ATTACH_TO_RUNNING_JOB,
    type: DEBUG_TYPE,
    request: "attach",
    justMyCode: false,
  };
}

/**
 * For one folder's .vscode/launch.json; `entryScripts` are relative, with forward slashes. The
 * `debugpy` configuration only where the Python Debugger is installed to run it: elsewhere VS
 * Code answers "Configured debug type 'debugpy' is not supported" (and F5 might pick it).
 */
export function folderAdditions(entryScripts: readonly string[], { debugpy }: { debugpy: boolean }): LaunchAdditions {
  const configurations = [...(debugpy ? [currentFile()] : []), attachToRunningJob()];
  for (const script of entryScripts) {
    const path = `\${workspaceFolder}/${script}`;
    configurations.push(quickdev(`Quickdev: debug ${script}`, "debug", path, "${workspaceFolder}"));
    configurations.push(quickdev(`Quickdev: profile ${script}`, "profile", path, "${workspaceFolder}"));
  }
  return { configurations };
}

/** For the .code-workspace `launch` block: paths by folder name, and one compound. */
export function workspaceAdditions(
  folders: readonly { name: string; entryScripts: readonly string[] }[],
): LaunchAdditions {
  const configurations: DebugConfiguration[] = [];
  const debugNames: string[] = [];
  for (const folder of folders) {
    const root = `\${workspaceFolder:${folder.name}}`;
    for (const script of folder.entryScripts) {
      const debugName = `Quickdev: debug ${script} (${folder.name})`;
      debugNames.push(debugName);
      configurations.push(quickdev(debugName, "debug", `${root}/${script}`, root));
      configurations.push(
        quickdev(`Quickdev: profile ${script} (${folder.name})`, "profile", `${root}/${script}`, root),
      );
    }
  }
  const compounds: Compound[] = debugNames.length
    ? [{ name: COMPOUND, configurations: debugNames }]
    : [];
  return { configurations, compounds };
}

/** A script path as launch.json writes it: relative to its folder, forward slashes. */
export function relativeScript(folder: string, script: string): string {
  const normalize = (value: string): string => value.replace(/\\/g, "/").replace(/\/+$/, "");
  const base = normalize(folder);
  const full = normalize(script);
  return full.startsWith(`${base}/`) ? full.slice(base.length + 1) : full;
}
