// Reads the typed `quickdev.*` settings; defaults come from package.json through VS Code.
import * as vscode from "vscode";
import {
  type LensSettings,
  type QuickdevSettings,
  type VariableContext,
  resolveVariables,
} from "./settingsResolve";

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
  // VS Code fills in package.json's defaults, so a missing value means a broken manifest.
  const get = <T>(key: keyof QuickdevSettings): T => {
    const value = config.get<T>(key);
    if (value === undefined) {
      throw new Error(`package.json declares no default for quickdev.${key}`);
    }
    return value;
  };
  return {
    python: get<string>("python"),
    batches: get<number>("batches"),
    batchSize: get<number>("batchSize"),
    runsDir: get<string>("runsDir"),
    keepOutputs: get<boolean>("keepOutputs"),
    runsKeep: get<number>("runsKeep"),
    runsMaxSizeMb: get<number>("runsMaxSizeMb"),
    tensorShapes: get<boolean>("tensorShapes"),
    lenses: get<LensSettings>("lenses"),
  };
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
