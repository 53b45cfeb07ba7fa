// The Runs view's actions on a run: re-run, cancel, delete, compare with another.
import * as path from "node:path";
import * as vscode from "vscode";
import { debugScript } from "../debug";
import type { Jobs } from "../jobs/jobs";
import { type RunSummary, isError } from "../server/protocol";
import type { ResultPanels } from "../results/resultPanel";
import { describeRun, runLabel } from "./runFormat";
import type { QuickdevServer } from "../server/server";

export function registerRunActions(server: QuickdevServer, jobs: Jobs, results: ResultPanels): vscode.Disposable[] {
  const register = vscode.commands.registerCommand;
  return [
    // The same script (or module) in the same mode with the same arguments; its folder gives the
    // environment as before. A run given none leaves them to the server's defaults again. A NaN
    // hunt hunts again; a run with a memory forecast forecasts again, as its lens does.
    register("quickdev.run.rerun", (run: RunSummary) => {
      const job = run.module ? { module: run.module } : { script: run.script };
      const args = run.args?.length ? run.args : undefined;
      if (run.mode === "debug") {
        return debugScript(job, undefined, { args, findNonfinite: run.findNonfinite === true });
      }
      return jobs.run(run.mode === "profile" ? "profile" : "run", {
        ...job,
        ...(args ? { args } : {}),
        ...(run.findNonfinite ? { findNonfinite: true } : {}),
        ...(run.memoryForecast !== undefined ? { memoryForecast: "auto" } : {}),
      });
    }),
    register("quickdev.run.cancel", (run: RunSummary) => jobs.cancel(run.runId)),
    register("quickdev.run.delete", async (run: RunSummary) => {
      const choice = await vscode.window.showWarningMessage(
        `Delete run ${run.runId} of ${path.basename(run.script)} and everything it recorded?`,
        { modal: true },
        "Delete",
      );
      if (choice !== "Delete") {
        return;
      }
      const answer = await server.command("quickdev.deleteRun", { runId: run.runId });
      if (isError(answer)) {
        void vscode.window.showErrorMessage(`Quickdev: ${answer.error}`);
        return;
      }
      results.closeGone((runId) => runId !== run.runId);
      await jobs.refreshRuns();
    }),
    // Two runs selected in the view: those; one: pick the other from a list.
    register("quickdev.run.compare", async (run: RunSummary, selected?: readonly RunSummary[]) => {
      const chosen = (selected ?? []).filter((node): node is RunSummary => "runId" in node);
      if (chosen.length === 2) {
        return results.compare(chosen[0], chosen[1]);
      }
      // Runs of the same workspace folder: the other folders' scripts are other projects. A
      // module run read from disk names its module, not a file: its run directory tells the folder.
      const folderOf = (of: RunSummary): string | undefined => {
        const where = path.isAbsolute(of.script) ? of.script : of.runDir;
        return vscode.workspace.getWorkspaceFolder(vscode.Uri.file(where))?.uri.fsPath;
      };
      const folder = folderOf(run);
      const others = jobs.knownRuns().filter((other) => other.runId !== run.runId && folderOf(other) === folder);
      if (!others.length) {
        void vscode.window.showInformationMessage(
          `Quickdev: no other run of ${path.basename(run.script)}'s folder to compare with.`,
        );
        return undefined;
      }
      const picked = await vscode.window.showQuickPick(
        others.map((other) => ({
          label: runLabel(other),
          description: other.runId,
          detail: describeRun(other),
          run: other,
        })),
        { title: `Compare ${run.runId} with…`, matchOnDescription: true },
      );
      return picked && results.compare(run, picked.run);
    }),
  ];
}
