// Activation: wires the modules together and keeps the server in step with settings and trust.
// Must stay the first import: it times the loading of everything below.
import { LOAD_STARTED_MS } from "./startTime";
import * as vscode from "vscode";
import { registerCommands } from "./commands";
import { registerDebugging } from "./debug";
import { Jobs } from "./jobs/jobs";
import { createLogger, log } from "./common/logger";
import { InterpreterStatus } from "./server/interpreterStatus";
import { checkInterpreter, isChosen, onPythonExtensionChange, resolveInterpreter } from "./server/python";
import { workspaceSettingsApplied } from "./server/trustedSettings";
import { RestartQueue } from "./common/restartQueue";
import { ResultPanels } from "./results/resultPanel";
import { RunOutputs } from "./jobs/runOutput";
import { RunStore } from "./runs/runs";
import { RunsView } from "./runs/runsView";
import { RunsWatcher } from "./runs/runsWatcher";
import { QuickdevServer } from "./server/server";
import { SECTION, readSettings } from "./common/settings";
import { TensorBoardPanels } from "./tensorboard/tensorboardPanel";

let stopServer: (() => Promise<void>) | undefined;

export function activate(context: vscode.ExtensionContext): void {
  context.subscriptions.push(createLogger());
  const server = new QuickdevServer(context.extensionPath, () => restarts.settled());
  stopServer = () => server.stop();
  const store = new RunStore();
  const panels = new TensorBoardPanels((argument) => server.command("quickdev.resolveSource", argument));
  const outputs = new RunOutputs(store);
  const jobs = new Jobs(server, store, panels, outputs);
  const runsView = new RunsView(store);
  const results = new ResultPanels(server);
  context.subscriptions.push(server, store, panels, runsView, results, outputs);

  const status = new InterpreterStatus();
  context.subscriptions.push(status);
  const restarts = new RestartQueue(async () => {
    if (!vscode.workspace.isTrusted) {
      log.info("workspace not trusted: the language server stays off");
      status.hide();
      return;
    }
    const interpreter = await resolveInterpreter();
    status.show(interpreter);
    const checked = await checkInterpreter(interpreter, () => !restarts.overtaken && isChosen(interpreter));
    status.show(interpreter, checked.report, checked.problem);
    if (!checked.usable) {
      await server.stop();
      return;
    }
    await server.start(interpreter);
  });
  const restart = (): Promise<void> => restarts.request();
  const runsTree = vscode.window.createTreeView("quickdev.runs", { treeDataProvider: runsView, canSelectMany: true });

  context.subscriptions.push(
    ...registerCommands(server, jobs, panels, restart, results, outputs, context.workspaceState),
    runsTree,
    new RunsWatcher(() => jobs.refreshRuns(), runsTree),
    server.onRunChanged((summary) => store.update(summary)),
    // A run deleted (here, in another window, or its directory removed) takes its page along.
    store.onDidChange((run) => run === undefined && results.closeGone((runId) => store.get(runId) !== undefined)),
    // Runs from earlier sessions show up once the server is there to list them.
    server.onReadyChanged((ready) => ready && void jobs.refreshRuns()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.python`)) {
        void restart();
      } else if (event.affectsConfiguration(SECTION)) {
        void server.sendSettings();
      }
    }),
    // The workspace's restricted settings (quickdev.python) apply a moment after the trust.
    // The server starts even when the wait fails (a setting that cannot be read says so then).
    vscode.workspace.onDidGrantWorkspaceTrust(() => void workspaceSettingsApplied().finally(restart)),
  );
  registerDebugging(context, jobs, server);
  // One line a benchmark reads: code loading plus activate(), as VS Code counts activation.
  log.info(`activated in ${(performance.now() - LOAD_STARTED_MS).toFixed(1)} ms`);
  // The server starts in the background: activation must not wait for Python.
  void restart();
  // The Python extension's choice matters only while quickdev.python is empty.
  const onPythonChange = (): void => {
    if (!readSettings().python.trim()) {
      void restart();
    }
  };
  void onPythonExtensionChange(onPythonChange).then((subscription) => {
    if (subscription) {
      context.subscriptions.push(subscription);
    }
  });
}

export function deactivate(): Promise<void> | undefined {
  // Waiting here lets the server shut down cleanly (its jobs and TensorBoard with it).
  return stopServer?.();
}
