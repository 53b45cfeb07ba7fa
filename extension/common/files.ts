import * as vscode from "vscode";

/** Whether a file or folder exists, through VS Code's file system (so remote workspaces work). */
export async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}
