// Resolves a launch configuration: `run` and `profile` start a job with progress and end the
// launch there; `debug` starts the job under debugpy and becomes an attach to it.
import * as vscode from "vscode";
import { folderEnvironment } from "../common/folderEnvironment";
import type { Jobs } from "../jobs/jobs";
import { type QuickdevConfiguration, attachToStartedJob } from "./configuration";
import { startJobArgs } from "./launchArgs";

export async function resolveLaunch(
  jobs: Jobs,
  folder: vscode.WorkspaceFolder | undefined,
  config: QuickdevConfiguration,
  token?: vscode.CancellationToken,
): Promise<QuickdevConfiguration | undefined> {
  const fileEnv = await folderEnvironment(folder, config.envFile);
  const start = startJobArgs(config, fileEnv);
  if ("error" in start) {
    void vscode.window.showErrorMessage(`Quickdev: ${start.error}.`);
    return undefined;
  }
  const { mode, ...job } = start;
  if (mode !== "debug") {
    // Not a debug session: the job runs with progress and the debug launch ends here.
    void jobs.run(mode ?? "run", job);
    return undefined;
  }
  const answer = await jobs.startDebug(job, token);
  return answer?.attach && attachToStartedJob(config, answer.runId, answer.attach);
}
