// The commands that start a quickdev debug session: "Debug this file" (and "Debug this step",
// which first adds a breakpoint where the step begins) and "Attach to Running Job".
import * as path from "node:path";
import * as vscode from "vscode";
import { ATTACH_TO_RUNNING_JOB } from "../launch/launchConfigs";
import { ensureTrusted } from "../common/trust";
import type { JobTarget } from "../jobs/jobs";
import { DEBUG_TYPE, type QuickdevConfiguration } from "./configuration";
import { addTemporaryBreakpoint, removeTemporaryBreakpoint } from "./temporaryBreakpoints";

/**
 * Debugs a script (or a module, run as `python -m`) as a quick-dev job; with `at` (a file and
 * 0-based line, e.g. a training step), stops there first by adding a breakpoint that is removed
 * again once hit (unless the user had one there already). The breakpoint is the editor's own:
 * the job needs not know where. `findNonfinite`: the NaN hunt, which stops where the first
 * NaN/Inf was made. `args`: the script's arguments (left out: the server's defaults).
 */
export async function debugScript(
  job: JobTarget,
  at?: { file: string; line: number },
  { findNonfinite = false, args }: { findNonfinite?: boolean; args?: readonly string[] } = {},
): Promise<boolean> {
  if (!ensureTrusted()) {
    return false;
  }
  const anchor = "script" in job ? job.script : job.cwd;
  const folder = anchor
    ? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(anchor))
    : vscode.workspace.workspaceFolders?.[0];
  const temporaryId = at ? addTemporaryBreakpoint(at.file, at.line) : undefined;
  const target =
    "script" in job
      ? { script: job.script, cwd: folder?.uri.fsPath ?? path.dirname(job.script) }
      : { module: job.module, cwd: job.cwd };
  const config: QuickdevConfiguration = {
    type: DEBUG_TYPE,
    request: "launch",
    name: `Quickdev: ${findNonfinite ? "find first NaN in" : "debug"} ${"script" in job ? path.basename(job.script) : job.module}`,
    mode: "debug",
    ...target,
    ...(findNonfinite ? { findNonfinite } : {}),
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
