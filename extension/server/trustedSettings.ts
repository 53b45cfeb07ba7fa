// Right after the user trusts a workspace, VS Code applies the workspace's restricted settings
// (quickdev.python among them) a moment later than it reports the trust: an interpreter check run
// at once would read the setting without them and name another interpreter (python3). This waits
// until the setting reads what the workspace's files say, or a configuration change says so.
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { parse } from "jsonc-parser";
import * as vscode from "vscode";
import { log } from "../common/logger";
import { SECTION, readSettings } from "../common/settings";

const KEY = `${SECTION}.python`;
// A workspace whose update never comes (the file changed meanwhile) does not hold the server.
const MAX_WAIT_MS = 10_000;

async function settingIn(
  file: vscode.Uri | undefined,
  inner: (json: Record<string, unknown>) => unknown,
): Promise<string | undefined> {
  if (!file || file.scheme !== "file") {
    return undefined;
  }
  try {
    const json = parse(await readFile(file.fsPath, "utf8")) as Record<string, unknown> | undefined;
    const value = json && typeof json === "object" ? inner(json) : undefined;
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined; // no such file
  }
}

/** quickdev.python as the workspace's own files write it: the first folder's, else the workspace file's. */
async function writtenInWorkspace(): Promise<string | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const folderSettings = folder ? vscode.Uri.file(path.join(folder.uri.fsPath, ".vscode", "settings.json")) : undefined;
  const inFolder = await settingIn(folderSettings, (json) => json[KEY]);
  if (inFolder !== undefined) {
    return inFolder;
  }
  return settingIn(
    vscode.workspace.workspaceFile,
    (json) => (json.settings as Record<string, unknown> | undefined)?.[KEY],
  );
}

/** Resolves once quickdev.python reads as the workspace writes it (at once when it does). */
export async function workspaceSettingsApplied(): Promise<void> {
  const written = await writtenInWorkspace();
  if (written === undefined || readSettings().python === written) {
    return;
  }
  log.info(`waiting for VS Code to apply the workspace's ${KEY} after the trust was granted`);
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      subscription.dispose();
      resolve();
    };
    const subscription = vscode.workspace.onDidChangeConfiguration(() => readSettings().python === written && done());
    const timer = setTimeout(done, MAX_WAIT_MS);
  });
}
