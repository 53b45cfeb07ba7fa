// Workspace trust: nothing that executes code runs in an untrusted workspace.
import * as vscode from "vscode";

export function ensureTrusted(): boolean {
  if (vscode.workspace.isTrusted) {
    return true;
  }
  void vscode.window
    .showWarningMessage(
      "Quickdev runs no code in an untrusted workspace. Trust this workspace to run, debug or profile.",
      "Manage Workspace Trust",
    )
    .then((choice) => choice && vscode.commands.executeCommand("workbench.trust.manage"));
  return false;
}
