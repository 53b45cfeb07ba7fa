// The `quickdev` configuration provider: fills in F5's default, then hands a configuration to
// the launch or attach resolver once VS Code has substituted its variables.
import * as vscode from "vscode";
import type { Jobs } from "../jobs/jobs";
import type { QuickdevServer } from "../server/server";
import { ensureTrusted } from "../common/trust";
import { resolveAttach } from "./attachResolver";
import { CURRENT_FILE_DEFAULT, type QuickdevConfiguration, isEmpty } from "./configuration";
import { resolveLaunch } from "./launchResolver";

export class ConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(
    private readonly jobs: Jobs,
    private readonly server: QuickdevServer,
  ) {}

  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: QuickdevConfiguration,
  ): vscode.DebugConfiguration | undefined {
    // F5 without a launch.json: quick-dev debug the file in the editor.
    if (isEmpty(config)) {
      if (vscode.window.activeTextEditor?.document.languageId !== "python") {
        void vscode.window.showErrorMessage("Quickdev: open a Python training script to debug it.");
        return undefined;
      }
      return { ...CURRENT_FILE_DEFAULT };
    }
    return config;
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: QuickdevConfiguration,
    token?: vscode.CancellationToken,
  ): Promise<vscode.DebugConfiguration | undefined> {
    if (!ensureTrusted()) {
      return undefined;
    }
    return config.request === "attach"
      ? resolveAttach(this.server, config, token)
      : resolveLaunch(this.jobs, folder, config, token);
  }
}
