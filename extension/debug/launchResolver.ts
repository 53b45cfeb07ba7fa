// Resolves a launch configuration: `run` and `profile` start a job with progress and end the
// launch there; `debug` starts the job under debugpy and becomes an attach to it.
import * as vscode from "vscode";
import type { Jobs } from "../jobs";
import { type QuickdevConfiguration, attachToStartedJob } from "./configuration";

export async function resolveLaunch(
  jobs: Jobs,
  config: QuickdevConfiguration,
  token?: vscode.CancellationToken,
): Promise<QuickdevConfiguration | undefined> {
  if (!config.script) {
    void vscode.window.showErrorMessage(
      `Quickdev: the launch configuration "${config.name}" has no "script"; add the training script's path.`,
    );
    return undefined;
  }
  const options = { cwd: config.cwd, args: config.args, batches: config.batches };
  const mode = config.mode ?? "debug";
  if (mode !== "debug") {
    // Not a debug session: the job runs with progress and the debug launch ends here.
    void jobs.run(mode, config.script, options);
    return undefined;
  }
  const answer = await jobs.startDebug({ script: config.script, ...options }, token);
  return answer?.attach && attachToStartedJob(config, answer.runId, answer.attach);
}
