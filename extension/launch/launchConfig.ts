// "Quickdev: Generate Launch Configurations": every folder's .vscode/launch.json and the
// .code-workspace file, edited in place without touching what the user wrote.
import * as path from "node:path";
import * as vscode from "vscode";
import { exists } from "../common/files";
import { type EntryScript, folderAdditions, launchCwd, relativeScript, workspaceAdditions } from "./launchConfigs";
import { type LaunchAdditions, addToLaunch } from "./launchEdits";
import { log } from "../common/logger";
import { isError } from "../server/protocol";
import type { QuickdevServer } from "../server/server";

/** The Python Debugger extension, which runs `debugpy` configurations. */
const PYTHON_DEBUGGER = "ms-python.debugpy";

type FileOutcome = { uri: vscode.Uri; file: string } & ({ added: number } | { problem: string });

function displayName(uri: vscode.Uri): string {
  const relative = vscode.workspace.asRelativePath(uri, true);
  // A .code-workspace file usually lies outside its folders: its name says enough.
  return relative === uri.fsPath ? path.basename(uri.fsPath) : relative;
}

/**
 * Edits one file; a malformed or unsaved file is reported and left as it is. Writes go through
 * the editor (an edit, then save) rather than the disk: VS Code then reloads its launch
 * configurations at once, where a file watcher may be slow or absent (remote, code-server).
 */
async function editFile(uri: vscode.Uri, additions: LaunchAdditions, root: readonly string[]): Promise<FileOutcome> {
  const file = displayName(uri);
  const edit = new vscode.WorkspaceEdit();
  let document: vscode.TextDocument | undefined;
  let outcome: ReturnType<typeof addToLaunch>;
  if (await exists(uri)) {
    document = await vscode.workspace.openTextDocument(uri);
    if (document.isDirty) {
      return { uri, file, problem: "it has unsaved changes; save it and run the command again" };
    }
    outcome = addToLaunch(document.getText(), additions, root);
    if (outcome.kind === "changed") {
      const whole = new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length));
      edit.replace(uri, whole, outcome.text);
    }
  } else {
    outcome = addToLaunch("", additions, root);
    if (outcome.kind === "changed") {
      edit.createFile(uri, { contents: new TextEncoder().encode(outcome.text) });
    }
  }
  if (outcome.kind === "malformed") {
    return { uri, file, problem: `it is not valid JSON (${outcome.problem}); it was left unchanged` };
  }
  if (outcome.kind === "unchanged") {
    return { uri, file, added: 0 };
  }
  if (!(await vscode.workspace.applyEdit(edit)) || (document && !(await document.save()))) {
    return { uri, file, problem: "the editor refused the change; it was left unchanged" };
  }
  log.info(`${file}: added ${outcome.added.join(", ")}`);
  return { uri, file, added: outcome.added.length };
}

async function entryScripts(
  server: QuickdevServer,
  folders: readonly vscode.WorkspaceFolder[],
): Promise<Map<string, EntryScript[]> | string> {
  const answer = await server.command("quickdev.scanWorkspace", {
    folders: folders.map((folder) => folder.uri.fsPath),
  });
  if (isError(answer)) {
    return answer.error;
  }
  const byFolder = new Map<string, EntryScript[]>();
  for (const scanned of answer.folders) {
    const scripts = scanned.entryScripts.map(({ path: script, module, cwd }): EntryScript => {
      const relative = relativeScript(scanned.folder, script);
      return module && cwd !== undefined ? { script: relative, module, cwd: launchCwd(scanned.folder, cwd) } : relative;
    });
    byFolder.set(path.resolve(scanned.folder), scripts);
  }
  return byFolder;
}

export async function generateLaunchConfigurations(server: QuickdevServer): Promise<void> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length === 0) {
    void vscode.window.showErrorMessage(
      "Quickdev: open a folder or workspace first; launch configurations live in it.",
    );
    return;
  }
  const scan = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "Quickdev: finding entry scripts" },
    () => entryScripts(server, folders),
  );
  if (typeof scan === "string") {
    void vscode.window.showWarningMessage(`${scan} Only "Current File" configurations were added.`);
  }
  const scripts = (folder: vscode.WorkspaceFolder): EntryScript[] =>
    typeof scan === "string" ? [] : (scan.get(path.resolve(folder.uri.fsPath)) ?? []);

  const outcomes: FileOutcome[] = [];
  const debugpy = vscode.extensions.getExtension(PYTHON_DEBUGGER) !== undefined;
  // Each configuration once in the dropdown: with a .code-workspace file, the ones that
  // belong to no folder go there, not into every folder's launch.json.
  const workspaceFile = vscode.workspace.workspaceFile;
  const inWorkspaceFile = workspaceFile?.scheme === "file";
  for (const folder of folders) {
    const uri = vscode.Uri.joinPath(folder.uri, ".vscode", "launch.json");
    const additions = folderAdditions(scripts(folder), { debugpy, folderFree: !inWorkspaceFile });
    if (additions.configurations.length > 0) {
      outcomes.push(await editFile(uri, additions, []));
    }
  }
  if (inWorkspaceFile) {
    const additions = workspaceAdditions(
      folders.map((folder) => ({ name: folder.name, entryScripts: scripts(folder) })),
      { debugpy },
    );
    outcomes.push(await editFile(workspaceFile, additions, ["launch"]));
  }
  report(outcomes);
}

function report(outcomes: readonly FileOutcome[]): void {
  for (const outcome of outcomes) {
    if ("problem" in outcome) {
      void vscode.window
        .showErrorMessage(`Quickdev: ${outcome.file}: ${outcome.problem}.`, "Open File")
        .then((choice) => choice && vscode.window.showTextDocument(outcome.uri));
    }
  }
  const changed = outcomes.filter((outcome) => "added" in outcome) as { file: string; added: number }[];
  const added = changed.filter((outcome) => outcome.added > 0);
  if (added.length > 0) {
    const list = added.map((outcome) => `${outcome.file} (+${outcome.added})`).join(", ");
    void vscode.window.showInformationMessage(`Quickdev: added launch configurations to ${list}.`);
  } else if (changed.length > 0) {
    void vscode.window.showInformationMessage("Quickdev: the launch configurations are already there; nothing to add.");
  }
}
