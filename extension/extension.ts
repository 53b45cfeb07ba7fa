// Activation: wires the modules together and keeps the server in step with settings and trust.
import * as vscode from "vscode";
import { createLogger, log, showLog } from "./logger";
import { checkInterpreter, onPythonExtensionChange, resolveInterpreter } from "./python";
import { RestartQueue } from "./restartQueue";
import { QuickdevServer } from "./server";
import { SECTION } from "./settings";

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(createLogger());
  const server = new QuickdevServer(context.extensionPath);
  context.subscriptions.push(server);

  const restarts = new RestartQueue(async () => {
    if (!vscode.workspace.isTrusted) {
      log.info("workspace not trusted: the language server stays off");
      return;
    }
    const interpreter = await resolveInterpreter();
    if (!(await checkInterpreter(interpreter))) {
      await server.stop();
      return;
    }
    await server.start(interpreter);
  });

  context.subscriptions.push(
    vscode.commands.registerCommand("quickdev.restartServer", () => restarts.request()),
    vscode.commands.registerCommand("quickdev.showLog", showLog),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.python`)) {
        void restarts.request();
      } else if (event.affectsConfiguration(SECTION)) {
        void server.sendSettings();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restarts.request()),
  );
  const pythonChange = await onPythonExtensionChange(() => void restarts.request());
  if (pythonChange) {
    context.subscriptions.push(pythonChange);
  }
  void restarts.request();
}

export function deactivate(): void {
  // The server is a disposable in the context's subscriptions; VS Code stops it.
}
