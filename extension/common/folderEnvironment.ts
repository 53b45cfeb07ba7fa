// The environment a job gets from its workspace folder: the env file (`quickdev.envFile`, by
// default the folder's `.env`, as in the Python extension) under the `quickdev.env` setting.
// Lenses, palette commands and launch configurations all start from this.
import * as vscode from "vscode";
import { type Environment, mergeEnvironment, parseEnvFile } from "./environment";
import { exists } from "./files";
import { log } from "./logger";
import { SECTION, variableContext } from "./settings";
import { resolveVariables } from "./settingsResolve";

/**
 * `envFile`: a launch configuration's own (variables substituted already); without it, the
 * folder's setting. A missing file is no error (most folders have no .env); a malformed
 * `quickdev.env` is logged and left out.
 */
export async function folderEnvironment(
  folder: vscode.WorkspaceFolder | undefined,
  envFile?: string,
): Promise<Environment> {
  const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);
  const context = { ...variableContext(), workspaceFolder: folder?.uri.fsPath };
  const file = envFile ?? resolveVariables(config.get<string>("envFile") ?? "", context);
  let fromFile: Environment = {};
  if (file && !file.includes("${")) {
    const uri = vscode.Uri.file(file);
    if (await exists(uri)) {
      const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
      fromFile = parseEnvFile(text, process.env);
      log.info(`environment: ${Object.keys(fromFile).length} variable(s) from ${file}`);
    } else if (envFile) {
      log.warn(`environment: the envFile ${file} does not exist; the job runs without it`);
    }
  }
  const merged = mergeEnvironment(fromFile, config.get<unknown>("env"));
  if ("error" in merged) {
    log.warn(`quickdev.env: ${merged.error}; the setting is left out`);
    return fromFile;
  }
  return merged.env;
}
