// Chooses the interpreter (setting → Python extension → python3) and checks what it has.
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import { log } from "../common/logger";
import { type InterpreterReport, PROBE, findings, parseReport } from "./pythonCheck";
import { readSettings, variableContext } from "../common/settings";
import { type Interpreter, pickInterpreter } from "../common/settingsResolve";

// The subset of the Python extension's API (as typed by @vscode/python-extension) used here.
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    return api?.environments ? api : undefined;
  } catch (error) {
    log.warn(`the Python extension's API is unavailable: ${String(error)}`);
    return undefined;
  }
}

async function fromPythonExtension(): Promise<string | undefined> {
  const api = await pythonExtensionApi();
  if (!api) {
    return undefined;
  }
  const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
  const active = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(active.path);
  return resolved?.executable.uri?.fsPath ?? active.path;
}

/**
 * Whether `interpreter` is still what the settings choose (the setting's value now; with the
 * setting empty, the choice is the Python extension's, which restarts the server when it changes).
 */
export function isChosen(interpreter: Interpreter): boolean {
  const setting = readSettings().python.trim();
  if (!setting) {
    return interpreter.source !== "setting";
  }
  return (
    interpreter.source === "setting" && pickInterpreter(setting, undefined, variableContext()).path === interpreter.path
  );
}

export async function resolveInterpreter(): Promise<Interpreter> {
  const setting = readSettings().python;
  // Asking the Python extension is pointless when the setting decides.
  const fromExtension = setting.trim() ? undefined : await fromPythonExtension();
  return pickInterpreter(setting, fromExtension, variableContext());
}

/** Calls back when the Python extension's active environment changes (if it is installed). */
export async function onPythonExtensionChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtensionApi();
  return api?.environments.onDidChangeActiveEnvironmentPath(listener);
}

function run(python: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) {
        const detail = stderr.trim().split(/\r?\n/).pop() || error.message;
        reject(new Error(detail));
      } else {
        resolve(stdout);
      }
    });
  });
}

// What the user was already told this session: a restart should not repeat the same offer.
const told = new Set<string>();

export interface Checked {
  /** False when the interpreter cannot run the server at all. */
  usable: boolean;
  report?: InterpreterReport;
  /** One line on what blocks it, for the status bar. */
  problem?: string;
}

/**
 * Checks what the interpreter has and tells the user what it lacks. `stillCurrent` says whether
 * it is still the interpreter the settings choose: a check that a newer restart overtook (a
 * setting that changed, a trust just granted) shows nothing, so no message ever names an
 * interpreter that does not run the jobs, and "Install" asks again before it installs.
 */
export async function checkInterpreter(interpreter: Interpreter, stillCurrent: () => boolean): Promise<Checked> {
  const python = interpreter.path;
  let report: InterpreterReport;
  try {
    report = parseReport(await run(python, ["-c", PROBE]));
  } catch (error) {
    const message =
      `Quickdev cannot run the Python interpreter "${python}" (${(error as Error).message}). ` +
      "Set quickdev.python to a Python 3.10+ interpreter.";
    log.error(message);
    if (stillCurrent()) {
      void showWithSettingsButton(message);
    }
    return { usable: false, problem: message };
  }
  log.info(`interpreter ${report.executable} (${interpreter.source}), torch ${report.torch ?? "missing"}`);
  let problem: string | undefined;
  for (const finding of findings(python, report)) {
    log.warn(finding.message);
    // A missing profiler package only stops profiling: the status bar stays plain for it.
    if (finding.kind !== "noProfiler") {
      problem ??= finding.message;
    }
    if (finding.kind === "tooOld") {
      if (stillCurrent()) {
        void showWithSettingsButton(finding.message);
      }
      return { usable: false, report, problem };
    }
    const key = `${python}\n${finding.kind}`;
    if (told.has(key) || !stillCurrent()) {
      continue;
    }
    told.add(key);
    if (finding.kind === "noTorch") {
      void vscode.window
        .showWarningMessage(finding.message, "Copy Command")
        .then((choice) => choice && vscode.env.clipboard.writeText(finding.command));
    } else {
      void vscode.window.showInformationMessage(finding.message, "Install").then((choice) => {
        if (choice !== "Install") {
          return;
        }
        if (!stillCurrent()) {
          void vscode.window.showWarningMessage(
            "Quickdev: the interpreter setting changed since this offer; nothing was installed.",
          );
          return;
        }
        const terminal = vscode.window.createTerminal("Quickdev: install");
        terminal.show();
        terminal.sendText(finding.command);
      });
    }
  }
  return { usable: true, report, problem };
}

async function showWithSettingsButton(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Open Settings");
  if (choice) {
    await vscode.commands.executeCommand("workbench.action.openSettings", "quickdev.python");
  }
}
