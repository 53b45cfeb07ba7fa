// The "Quickdev Runs" view: one item per run, newest first, with actions by state.
import * as vscode from "vscode";
import { type RunStatus, type RunSummary, isFinished } from "./protocol";
import { describeRun, formatLoss, runLabel } from "./runFormat";
import type { RunStore } from "./runs";

const ICONS: Record<RunStatus, [string, string?]> = {
  queued: ["clock"],
  running: ["sync~spin"],
  passed: ["pass", "testing.iconPassed"],
  failed: ["error", "testing.iconFailed"],
  stopped: ["debug-stop", "testing.iconPassed"],
  killed: ["circle-slash", "testing.iconErrored"],
  cancelled: ["circle-slash"],
};

export class RunsView implements vscode.TreeDataProvider<RunSummary>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunSummary | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly store: RunStore) {
    // A run's item is keyed by id, so a full refresh keeps selection and is cheap at this size.
    this.subscription = store.onDidChange(() => this.changed.fire(undefined));
  }

  getChildren(element?: RunSummary): RunSummary[] {
    return element ? [] : this.store.all();
  }

  getTreeItem(run: RunSummary): vscode.TreeItem {
    const item = new vscode.TreeItem(runLabel(run), vscode.TreeItemCollapsibleState.None);
    item.id = run.runId;
    // In a multi-root workspace the folder tells runs of same-named scripts apart.
    const folders = vscode.workspace.workspaceFolders ?? [];
    const folder = folders.length > 1 ? vscode.workspace.getWorkspaceFolder(vscode.Uri.file(run.script))?.name : undefined;
    item.description = folder ? `${folder} · ${describeRun(run)}` : describeRun(run);
    const [icon, color] = ICONS[run.status] ?? ["question"];
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    const context = [`run`, run.mode];
    if (isFinished(run.status)) {
      context.push("finished");
    }
    if (run.error?.file) {
      context.push("hasError");
    }
    item.contextValue = context.join(" ");
    const tooltip = new vscode.MarkdownString();
    tooltip.appendText(`${run.script}\n${describeRun(run)}\n${run.runDir}`);
    if (run.losses?.length) {
      tooltip.appendText(`\nlosses: ${run.losses.map(formatLoss).join(", ")}`);
    }
    if (run.error) {
      tooltip.appendText(`\n${run.error.message}`);
    }
    item.tooltip = tooltip;
    if (run.error?.file) {
      item.command = { command: "quickdev.run.openError", title: "Go to Failing Line", arguments: [run] };
    } else if (isFinished(run.status)) {
      item.command = { command: "quickdev.run.openResult", title: "Open Result", arguments: [run] };
    }
    return item;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
