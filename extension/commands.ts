// Palette commands, the code lens commands the server's lenses carry, and the Runs view actions.
import * as vscode from "vscode";
import { attachToRunningJob, debugScript } from "./debug";
import type { ArgumentMemory } from "./jobs/arguments";
import { askArguments } from "./jobs/askArguments";
import type { JobTarget, Jobs } from "./jobs/jobs";
import { generateLaunchConfigurations } from "./launch/launchConfig";
import { showLog } from "./common/logger";
import {
  CLEAR_SHAPES_LENS,
  LENS_COMMANDS,
  type LensArgument,
  type RunSummary,
  isError,
  parseLensArgument,
} from "./server/protocol";
import type { QuickdevServer } from "./server/server";
import type { ResultPanels } from "./results/resultPanel";
import { registerRunActions } from "./runs/runActions";
import type { RunOutputs } from "./jobs/runOutput";
import type { TensorBoardPanels } from "./tensorboard/tensorboardPanel";

/** The saved Python file in the editor, or undefined after telling the user why not. */
async function currentScript(): Promise<string | undefined> {
  const document = vscode.window.activeTextEditor?.document;
  if (!document || document.languageId !== "python") {
    void vscode.window.showErrorMessage("Quickdev: open a Python training script first.");
    return undefined;
  }
  if (document.isUntitled) {
    void vscode.window.showErrorMessage("Quickdev: save the script to a file first; jobs run files from disk.");
    return undefined;
  }
  if (document.isDirty && !(await document.save())) {
    return undefined;
  }
  return document.uri.fsPath;
}

function lensHandler(run: (lens: LensArgument) => unknown) {
  return (argument: unknown): unknown => {
    const parsed = parseLensArgument(argument);
    if (!parsed) {
      void vscode.window.showErrorMessage(
        `Quickdev: a code lens sent ${JSON.stringify(argument)}; expected {"script": path}. Run 'Quickdev: Restart Server'.`,
      );
      return undefined;
    }
    return run(parsed);
  };
}

/** The shape hints go until the next run (the server asks the editor for hints again). */
async function clearTensorShapes(server: QuickdevServer): Promise<void> {
  const answer = await server.command("quickdev.clearShapes", {});
  if (isError(answer)) {
    void vscode.window.showErrorMessage(answer.error);
  }
}

/** A lens's job: its script, or the module it runs only as (`python -m`, from the folder given). */
function lensJob({ script, module, cwd }: LensArgument): JobTarget {
  return module ? { module, cwd } : { script };
}

async function openAt(file: string, line: number): Promise<void> {
  const position = new vscode.Position(Math.max(line, 0), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(file), {
    selection: new vscode.Range(position, position),
  });
}

export function registerCommands(
  server: QuickdevServer,
  jobs: Jobs,
  panels: TensorBoardPanels,
  restart: () => Promise<void>,
  results: ResultPanels,
  outputs: RunOutputs,
  memory: ArgumentMemory,
): vscode.Disposable[] {
  const register = vscode.commands.registerCommand;
  const runWithArguments = async (job: JobTarget): Promise<void> => {
    const args = await askArguments(memory, job);
    return args && jobs.run("run", { ...job, args });
  };
  const debugWithArguments = async (job: JobTarget): Promise<boolean | undefined> => {
    const args = await askArguments(memory, job);
    return args && debugScript(job, undefined, { args });
  };
  return [
    register("quickdev.generateLaunchConfigurations", () => generateLaunchConfigurations(server)),
    register("quickdev.runCurrentFile", async () => {
      const script = await currentScript();
      return script && jobs.run("run", { script });
    }),
    register("quickdev.profileCurrentFile", async () => {
      const script = await currentScript();
      return script && jobs.run("profile", { script });
    }),
    register("quickdev.debugCurrentFile", async () => {
      const script = await currentScript();
      return script && debugScript({ script });
    }),
    register("quickdev.runCurrentFileWithArguments", async () => {
      const script = await currentScript();
      return script && runWithArguments({ script });
    }),
    register("quickdev.debugCurrentFileWithArguments", async () => {
      const script = await currentScript();
      return script && debugWithArguments({ script });
    }),
    register("quickdev.attachToRunningJob", attachToRunningJob),
    register("quickdev.showTensorBoard", () => jobs.openTensorBoard()),
    register("quickdev.showRuns", async () => {
      await vscode.commands.executeCommand("quickdev.runs.focus");
      await jobs.refreshRuns();
    }),
    register("quickdev.refreshRuns", () => jobs.refreshRuns()),
    register("quickdev.restartServer", restart),
    register("quickdev.showLog", showLog),
    register("quickdev.tensorboard.refresh", () => panels.refreshActive()),
    register("quickdev.clearTensorShapes", () => clearTensorShapes(server)),
    register(CLEAR_SHAPES_LENS, () => clearTensorShapes(server)),

    register(
      LENS_COMMANDS.run,
      lensHandler((lens) => jobs.run("run", lensJob(lens))),
    ),
    register(
      LENS_COMMANDS.runWithArguments,
      lensHandler((lens) => runWithArguments(lensJob(lens))),
    ),
    register(
      LENS_COMMANDS.profile,
      lensHandler((lens) => jobs.run("profile", lensJob(lens))),
    ),
    register(
      LENS_COMMANDS.debug,
      lensHandler((lens) => debugScript(lensJob(lens))),
    ),
    register(
      LENS_COMMANDS.memoryForecast,
      lensHandler((lens) => jobs.run("run", { ...lensJob(lens), memoryForecast: "auto" })),
    ),
    register(
      LENS_COMMANDS.findNonfinite,
      lensHandler((lens) => debugScript(lensJob(lens), undefined, { findNonfinite: true })),
    ),
    register(
      LENS_COMMANDS.debugStep,
      lensHandler(({ script, file, line }) =>
        debugScript({ script }, line === undefined ? undefined : { file: file ?? script, line }),
      ),
    ),

    register("quickdev.run.openResult", (run: RunSummary) => results.show(run)),
    register("quickdev.run.openOutput", (run: RunSummary) => outputs.open(run)),
    ...registerRunActions(server, jobs, results),
    register("quickdev.run.openTensorBoard", (run: RunSummary) => jobs.openTensorBoard(run.runId)),
    register("quickdev.run.openError", async (run: RunSummary) => {
      if (!run.error?.file) {
        void vscode.window.showInformationMessage(`Quickdev: run ${run.runId} has no failing line.`);
        return;
      }
      // The result's lines are Python's, 1-based.
      await openAt(run.error.file, (run.error.line ?? 1) - 1);
    }),
  ];
}
