// Quick-dev jobs as the user sees them: progress, cancellation, the message at the end.
import * as path from "node:path";
import * as vscode from "vscode";
import { log } from "../common/logger";
import { type JobMode, type RunSummary, type StartJobAnswer, type StartJobArgs, isError } from "../server/protocol";
import { folderEnvironment } from "../common/folderEnvironment";
import { LIVE_TICK_MS, describeRun, endMessage } from "../runs/runFormat";
import type { RunStore } from "../runs/runs";
import type { QuickdevServer } from "../server/server";
import type { RunOutputs } from "./runOutput";
import type { TensorBoardPanels } from "../tensorboard/tensorboardPanel";
import { ensureTrusted } from "../common/trust";

/** A job's startJob argument besides its mode: a `script`, or a `module` run as `python -m`. */
export type JobRequest = Omit<StartJobArgs, "mode">;

/** What a job runs: a script, or a module run as `python -m` does (from `cwd`). */
export type JobTarget = { script: string } | { module: string; cwd?: string };

/** How the user knows the job: the script's name, or the module's. */
function jobName(job: JobRequest): string {
  return job.module ?? path.basename(job.script ?? "");
}

// How long a cancelled job may take to report its end before the progress closes anyway.
const CANCEL_GRACE_MS = 15_000;

export class Jobs {
  constructor(
    private readonly server: QuickdevServer,
    private readonly store: RunStore,
    private readonly panels: TensorBoardPanels,
    private readonly outputs: RunOutputs,
  ) {}

  /** Runs or profiles a script with cancellable progress; a profile opens in TensorBoard. */
  async run(mode: Exclude<JobMode, "debug">, job: JobRequest): Promise<void> {
    if (!ensureTrusted()) {
      return;
    }
    const name = jobName(job);
    const final = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Quickdev: ${mode === "profile" ? "profiling" : "running"} ${name}`,
        cancellable: true,
      },
      async (progress, token) => {
        const answer = await this.server.command("quickdev.startJob", { ...(await withFolderDefaults(job)), mode });
        if (isError(answer)) {
          void vscode.window.showErrorMessage(answer.error);
          return undefined;
        }
        log.info(`${mode} ${job.module ?? job.script}: run ${answer.runId} in ${answer.runDir}`);
        this.outputs.follow(answer.runId, name);
        // Redrawn on every report from the server and every tick between them: the elapsed
        // time moves even while one long step reports nothing.
        let cancelling = false;
        const report = (): void => {
          const run = this.store.get(answer.runId);
          const what = run ? describeRun(run) : "starting";
          progress.report({ message: cancelling ? `cancelling… · ${what}` : what });
        };
        const updates = this.store.onDidChange((run) => run?.runId === answer.runId && report());
        const ticker = setInterval(report, LIVE_TICK_MS);
        // Cancel asks the server to stop the job, then waits (a while) to report how it ended.
        const giveUp = new vscode.CancellationTokenSource();
        let timer: NodeJS.Timeout | undefined;
        const cancel = token.onCancellationRequested(() => {
          log.info(`cancelling run ${answer.runId}`);
          cancelling = true;
          report();
          void this.cancel(answer.runId);
          timer = setTimeout(() => giveUp.cancel(), CANCEL_GRACE_MS);
        });
        try {
          return await this.store.waitForEnd(answer.runId, giveUp.token);
        } finally {
          clearTimeout(timer);
          clearInterval(ticker);
          giveUp.dispose();
          updates.dispose();
          cancel.dispose();
        }
      },
    );
    if (!final) {
      return;
    }
    if (mode === "profile" && (final.status === "passed" || final.status === "stopped")) {
      await this.openTensorBoard(final.runId);
    }
    this.announce(final);
  }

  /** Starts a job under debugpy and answers where to attach; undefined if it could not start. */
  async startDebug(job: JobRequest, token?: vscode.CancellationToken): Promise<StartJobAnswer | undefined> {
    if (!ensureTrusted()) {
      return undefined;
    }
    const answer = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Quickdev: starting ${jobName(job)} under the debugger`,
        cancellable: false,
      },
      async () => this.server.command("quickdev.startJob", { ...(await withFolderDefaults(job)), mode: "debug" }),
    );
    if (isError(answer)) {
      void vscode.window.showErrorMessage(answer.error);
      return undefined;
    }
    if (token?.isCancellationRequested) {
      void this.cancel(answer.runId);
      return undefined;
    }
    if (!answer.attach) {
      void vscode.window.showErrorMessage(
        `Quickdev: the debug job ${answer.runId} did not report where to attach; see 'Quickdev: Show Log'.`,
      );
      return undefined;
    }
    log.info(
      `debug ${job.module ?? job.script}: run ${answer.runId}, debugpy on ${answer.attach.host}:${answer.attach.port}`,
    );
    void this.store.waitForEnd(answer.runId).then((final) => final && this.announce(final));
    return answer;
  }

  async cancel(runId: string): Promise<void> {
    const answer = await this.server.command("quickdev.cancelJob", { runId });
    if (isError(answer)) {
      log.warn(answer.error);
    }
  }

  async openTensorBoard(runId?: string): Promise<void> {
    if (!ensureTrusted()) {
      return;
    }
    const answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Quickdev: starting TensorBoard" },
      () => this.server.command("quickdev.openTensorBoard", runId ? { runId } : {}),
    );
    if (isError(answer)) {
      void vscode.window.showErrorMessage(answer.error);
      return;
    }
    await this.panels.show(answer.url, answer.run ? `TensorBoard: ${answer.run}` : "TensorBoard", runId);
  }

  /** Every run the window knows, newest first. */
  knownRuns(): RunSummary[] {
    return this.store.all();
  }

  /** Fills the store from the server (after a (re)start); whether the server listed the runs
   * (it may be starting or stopped). */
  async refreshRuns(): Promise<boolean> {
    const answer = await this.server.command("quickdev.listRuns", {});
    if (isError(answer)) {
      log.warn(answer.error);
      return false;
    }
    this.store.replaceAll(answer.runs);
    return true;
  }

  private announce(run: RunSummary): void {
    const message = endMessage(run);
    if (run.status === "failed") {
      const actions = run.error?.file ? ["Go to Failing Line", "Show Result"] : ["Show Result"];
      void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
        if (choice === "Go to Failing Line") {
          void vscode.commands.executeCommand("quickdev.run.openError", run);
        } else if (choice === "Show Result") {
          void vscode.commands.executeCommand("quickdev.run.openResult", run);
        }
      });
    } else if (run.status === "error") {
      void vscode.window.showWarningMessage(message, "Show Result").then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand("quickdev.run.openResult", run);
        }
      });
    } else {
      void vscode.window.showInformationMessage(message, "Show Result").then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand("quickdev.run.openResult", run);
        }
      });
    }
  }
}

/**
 * Jobs run from the folder that holds the script, with that folder's environment (its .env and
 * `quickdev.env`), unless the caller (a launch configuration) says otherwise. A module without a
 * `cwd` is looked for in every workspace folder by the server; it gets the first folder's environment.
 */
async function withFolderDefaults(job: JobRequest): Promise<JobRequest> {
  const anchor = job.script ?? job.cwd;
  const folder = anchor
    ? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(anchor))
    : vscode.workspace.workspaceFolders?.[0];
  const cwd = job.cwd || (job.script ? (folder?.uri.fsPath ?? path.dirname(job.script)) : undefined);
  return { ...job, cwd, env: job.env ?? (await folderEnvironment(folder)) };
}
