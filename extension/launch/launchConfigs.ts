// The configurations "Generate Launch Configurations" adds. No vscode import.
import { DEBUG_TYPE } from "../debug/configuration";
import type { Compound, CompoundMember, DebugConfiguration, LaunchAdditions } from "./launchEdits";

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
 * `folderFree`: also the configurations that belong to no folder (Current File, Attach), when
 * there is no .code-workspace file to hold them once for all folders.
 */
export function folderAdditions(
  entryScripts: readonly string[],
  { debugpy, folderFree = true }: { debugpy: boolean; folderFree?: boolean },
): LaunchAdditions {
  const configurations = folderFree ? folderFreeConfigurations(debugpy) : [];
  for (const script of entryScripts) {
    const path = `\${workspaceFolder}/${script}`;
    configurations.push(quickdev(debugName(script), "debug", path, "${workspaceFolder}"));
    configurations.push(quickdev(`Quickdev: profile ${script}`, "profile", path, "${workspaceFolder}"));
  }
  return { configurations };
}

function folderFreeConfigurations(debugpy: boolean): DebugConfiguration[] {
  return [...(debugpy ? [currentFile()] : []), attachToRunningJob()];
}

function debugName(script: string): string {
  return `Quickdev: debug ${script}`;
}

/**
 * For the .code-workspace `launch` block of a multi-root workspace. The Run and Debug dropdown
 * lists every folder's configurations ("name (folder)") beside the workspace file's, so a
 * script's configurations live in its folder only; the workspace file holds what belongs to no
 * one folder: Current File, Attach, and a compound naming each folder's debug configuration.
 */
export function workspaceAdditions(
  folders: readonly { name: string; entryScripts: readonly string[] }[],
  { debugpy }: { debugpy: boolean },
): LaunchAdditions {
  const members: CompoundMember[] = folders.flatMap((folder) =>
    folder.entryScripts.map((script) => ({ name: debugName(script), folder: folder.name })),
  );
  const compounds: Compound[] = members.length ? [{ name: COMPOUND, configurations: members }] : [];
  return { configurations: folderFreeConfigurations(debugpy), compounds };
}

/** A script path as launch.json writes it: relative to its folder, forward slashes. */
export function relativeScript(folder: string, script: string): string {
  const normalize = (value: string): string => value.replace(/\\/g, "/").replace(/\/+$/, "");
  const base = normalize(folder);
  const full = normalize(script);
  return full.startsWith(`${base}/`) ? full.slice(base.length + 1) : full;
}
