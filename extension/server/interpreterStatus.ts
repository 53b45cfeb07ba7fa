// The status bar item that says which interpreter runs Quickdev's jobs (as the Python extension
// shows its own); a click opens the quickdev.python setting.
import * as vscode from "vscode";
import type { Interpreter } from "../common/settingsResolve";
import { type InterpreterReport, interpreterLabel } from "./pythonCheck";

const SOURCES: Record<Interpreter["source"], string> = {
  setting: "the quickdev.python setting",
  "python-extension": "the Python extension's active environment",
  default: "the default (quickdev.python is empty)",
};

export class InterpreterStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    "quickdev.interpreter",
    vscode.StatusBarAlignment.Right,
    100,
  );

  constructor() {
    this.item.name = "Quickdev Interpreter";
    this.item.command = {
      title: "Quickdev interpreter",
      command: "workbench.action.openSettings",
      arguments: ["quickdev.python"],
    };
  }

  /** The interpreter the server and its jobs run with; `report` once it was checked. */
  show(interpreter: Interpreter, report?: InterpreterReport, problem?: string): void {
    const version = report ? `${report.version[0]}.${report.version[1]}` : undefined;
    this.item.text = `$(beaker) ${interpreterLabel(interpreter.path, version)}`;
    const facts = [
      `Quickdev jobs run with ${report?.executable ?? interpreter.path}`,
      report ? `Python ${version}, torch ${report.torch ?? "not installed"}` : undefined,
      `from ${SOURCES[interpreter.source]}`,
      problem,
      "Click to change quickdev.python.",
    ];
    this.item.tooltip = facts.filter(Boolean).join("\n");
    this.item.backgroundColor = problem ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  hide(): void {
    this.item.hide();
  }

  dispose(): void {
    this.item.dispose();
  }
}
