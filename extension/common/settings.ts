// Reads the typed `quickdev.*` settings; defaults come from package.json through VS Code.
import * as vscode from "vscode";
import { type QuickdevSettings, type VariableContext, resolveVariables, settingsFrom } from "./settingsResolve";

export const SECTION = "quickdev";

export function variableContext(): VariableContext {
  const folders = vscode.workspace.workspaceFolders ?? [];
  return {
    workspaceFolder: folders[0]?.uri.fsPath,
    folders: Object.fromEntries(folders.map((folder) => [folder.name, folder.uri.fsPath])),
    env: process.env,
  };
}

function scope(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

/** The settings as written (with the package.json defaults filled in by VS Code). */
export function readSettings(): QuickdevSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope());
  return settingsFrom((key) => config.get(key));
}

/** What the server receives: paths resolved, the interpreter already chosen. */
export function serverSettings(pythonPath: string): QuickdevSettings {
  const settings = readSettings();
  const context = variableContext();
  return {
    ...settings,
    python: pythonPath,
    // Relative runs directories stay relative: the server puts one under each workspace folder.
    runsDir: resolveVariables(settings.runsDir, context),
  };
}
