// The commands that start a quickdev debug session: "Debug this file" (and "Debug this step",
// which first adds a breakpoint where the step begins) and "Attach to Running Job".
import * as path from "node:path";
import * as vscode from "vscode";
import { ATTACH_TO_RUNNING_JOB } from "../launch/launchConfigs";
import { ensureTrusted } from "../common/trust";
import { DEBUG_TYPE, type QuickdevConfiguration } from "./configuration";
import { addTemporaryBreakpoint, removeTemporaryBreakpoint } from "./temporaryBreakpoints";

/**
 * Debugs a script as a quick-dev job; with `at` (a file and 0-based line, e.g. a training step),
 * stops there first by adding a breakpoint that is removed again once hit (unless the user had
 * one there already). The breakpoint is the editor's own: the job needs not know where. `args`:
 * the script's arguments (left out: the server's defaults).
 */
export async function debugScript(
  script: string,
  at?: { file: string; line: number },
  args?: readonly string[],
): Promise<boolean> {
  if (!ensureTrusted()) {
    return false;
  }
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(script));
  const temporaryId = at ? addTemporaryBreakpoint(at.file, at.line) : undefined;
  const config: QuickdevConfiguration = {
    type: DEBUG_TYPE,
    request: "launch",
    name: `Quickdev: debug ${path.basename(script)}`,
    mode: "debug",
    script,
    cwd: folder?.uri.fsPath ?? path.dirname(script),
    ...(args ? { args: [...args] } : {}),
    quickdevTemporaryBreakpoint: temporaryId,
  };
  const started = await vscode.debug.startDebugging(folder, config);
  if (!started) {
    removeTemporaryBreakpoint(temporaryId);
  }
  return started;
}

/** "Quickdev: Attach to Running Job": the attach configuration, resolved through the picker. */
export async function attachToRunningJob(): Promise<boolean> {
  if (!ensureTrusted()) {
    return false;
  }
  return vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], {
    type: DEBUG_TYPE,
    request: "attach",
    name: ATTACH_TO_RUNNING_JOB,
  });
}
