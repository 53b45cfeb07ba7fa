// The "Quickdev Runs" view: runs newest first, grouped by workspace folder in a multi-root
// workspace, with actions by state.
import * as vscode from "vscode";
import { joinArguments } from "../jobs/arguments";
import { type RunStatus, type RunSummary, isFinished } from "../server/protocol";
import { LIVE_TICK_MS, describeRun, formatLoss, runLabel } from "./runFormat";
import { type RunGroup, groupByFolder } from "./runGroups";
import type { RunStore } from "./runs";

const ICONS: Record<RunStatus, [string, string?]> = {
  queued: ["clock"],
  running: ["sync~spin"],
  passed: ["pass", "testing.iconPassed"],
  failed: ["error", "testing.iconFailed"],
  stopped: ["debug-stop", "testing.iconPassed"],
  killed: ["circle-slash", "testing.iconErrored"],
  error: ["warning", "testing.iconErrored"],
  cancelled: ["circle-slash"],
};

export type RunsNode = RunSummary | RunGroup;

const isGroup = (node: RunsNode): node is RunGroup => "folder" in node && "runs" in node;

export class RunsView implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: vscode.Disposable;

  private readonly ticker: NodeJS.Timeout;

  constructor(private readonly store: RunStore) {
    // A run's item is keyed by id, so a full refresh keeps selection and is cheap at this size.
    this.subscription = store.onDidChange(() => this.changed.fire(undefined));
    // Live runs' elapsed time moves between the server's reports: their items are redrawn.
    this.ticker = setInterval(() => {
      for (const run of store.all()) {
        if (!isFinished(run.status)) {
          this.changed.fire(run);
        }
      }
    }, LIVE_TICK_MS);
  }

  getChildren(element?: RunsNode): RunsNode[] {
    if (element) {
      return isGroup(element) ? element.runs : [];
    }
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length < 2) {
      return this.store.all();
    }
    const folderOf = (script: string): string | undefined =>
      vscode.workspace.getWorkspaceFolder(vscode.Uri.file(script))?.name;
    return groupByFolder(
      this.store.all(),
      folders.map((f) => f.name),
      folderOf,
    );
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    if (isGroup(node)) {
      const item = new vscode.TreeItem(node.folder || "other scripts", vscode.TreeItemCollapsibleState.Expanded);
      item.id = `folder:${node.folder}`;
      item.iconPath = new vscode.ThemeIcon(node.folder ? "root-folder" : "folder");
      item.description = `${node.runs.length} run${node.runs.length === 1 ? "" : "s"}`;
      item.contextValue = "runGroup";
      return item;
    }
    return this.runItem(node);
  }

  private runItem(run: RunSummary): vscode.TreeItem {
    const item = new vscode.TreeItem(runLabel(run), vscode.TreeItemCollapsibleState.None);
    item.id = run.runId;
    item.description = describeRun(run);
    const [icon, color] = ICONS[run.status] ?? ["question"];
    item.iconPath = new vscode.ThemeIcon(icon, color ? new vscode.ThemeColor(color) : undefined);
    const context = [`run`, run.mode];
    context.push(isFinished(run.status) ? "finished" : "live");
    if (run.error?.file) {
      context.push("hasError");
    }
    item.contextValue = context.join(" ");
    const tooltip = new vscode.MarkdownString();
    const args = run.args?.length ? ` ${joinArguments(run.args)}` : "";
    tooltip.appendText(`${run.script}${args}\n${describeRun(run)}\n${run.runDir}`);
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
    clearInterval(this.ticker);
    this.subscription.dispose();
    this.changed.dispose();
  }
}
