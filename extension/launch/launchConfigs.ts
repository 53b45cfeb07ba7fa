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

/**
 * An entry script, relative to its folder with forward slashes; for one that runs only as
 * `python -m`, also the module and the folder to run it from, as launch.json writes it.
 */
export type EntryScript = string | { script: string; module: string; cwd: string };

function quickdev(name: string, mode: "debug" | "profile", entry: EntryScript): DebugConfiguration {
  const target =
    typeof entry === "string"
      ? { script: `\${workspaceFolder}/${entry}`, cwd: "${workspaceFolder}" }
      : { module: entry.module, cwd: entry.cwd };
  return { name, type: DEBUG_TYPE, request: "launch", mode, ...target, justMyCode: false };
}

function scriptOf(entry: EntryScript): string {
  return typeof entry === "string" ? entry : entry.script;
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
  entryScripts: readonly EntryScript[],
  { debugpy, folderFree = true }: { debugpy: boolean; folderFree?: boolean },
): LaunchAdditions {
  const configurations = folderFree ? folderFreeConfigurations(debugpy) : [];
  for (const entry of entryScripts) {
    configurations.push(quickdev(debugName(scriptOf(entry)), "debug", entry));
    configurations.push(quickdev(`Quickdev: profile ${scriptOf(entry)}`, "profile", entry));
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
  folders: readonly { name: string; entryScripts: readonly EntryScript[] }[],
  { debugpy }: { debugpy: boolean },
): LaunchAdditions {
  const members: CompoundMember[] = folders.flatMap((folder) =>
    folder.entryScripts.map((entry) => ({ name: debugName(scriptOf(entry)), folder: folder.name })),
  );
  const compounds: Compound[] = members.length ? [{ name: COMPOUND, configurations: members }] : [];
  return { configurations: folderFreeConfigurations(debugpy), compounds };
}

/** A module's folder as launch.json writes it: `${workspaceFolder}`, a folder under it, or absolute. */
export function launchCwd(folder: string, cwd: string): string {
  if (normalize(cwd) === normalize(folder)) {
    return "${workspaceFolder}";
  }
  const relative = relativeScript(folder, cwd);
  return relative === normalize(cwd) ? relative : `\${workspaceFolder}/${relative}`;
}

/** A script path as launch.json writes it: relative to its folder, forward slashes. */
export function relativeScript(folder: string, script: string): string {
  const base = normalize(folder);
  const full = normalize(script);
  return full.startsWith(`${base}/`) ? full.slice(base.length + 1) : full;
}

function normalize(value: string): string {
  return value.replace(/\\/g, "/").replace(/\/+$/, "");
}
