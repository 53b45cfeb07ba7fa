// "Open Result": a run's result.json as a readable page (resultPage.ts), one panel
// per run, refreshed when opened again; "Compare Runs": two of them side by side. The server reads the file: the layout is the backend's.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type RunSummary, isError } from "../server/protocol";
import { compareHtml } from "./comparePage";
import { resultHtml } from "./resultPage";
import type { QuickdevServer } from "../server/server";

const VIEW_TYPE = "quickdev.result";

export class ResultPanels implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  private comparison: vscode.WebviewPanel | undefined;

  constructor(private readonly server: QuickdevServer) {}

  async show(run: RunSummary): Promise<void> {
    const answer = await this.server.command("quickdev.getRun", {
      runId: run.runId,
    });
    if (isError(answer)) {
      void vscode.window.showWarningMessage(`Quickdev: ${answer.error}`);
      return;
    }
    let panel = this.panels.get(run.runId);
    if (!panel) {
      // No scripts: the page is static HTML under a CSP that allows only its own style.
      panel = vscode.window.createWebviewPanel(VIEW_TYPE, `Run ${run.runId}`, vscode.ViewColumn.Active, {
        enableScripts: false,
        localResourceRoots: [],
      });
      this.panels.set(run.runId, panel);
      panel.onDidDispose(() => this.panels.delete(run.runId));
    }
    panel.webview.html = resultHtml(answer.result, randomBytes(16).toString("base64"), answer.run.changes);
    panel.reveal();
  }

  /** Two runs side by side in one panel (reused for the next comparison). */
  async compare(first: RunSummary, second: RunSummary): Promise<void> {
    const answers = await Promise.all(
      [first, second].map((run) => this.server.command("quickdev.getRun", { runId: run.runId })),
    );
    const results: unknown[] = [];
    for (const answer of answers) {
      if (isError(answer)) {
        void vscode.window.showWarningMessage(`Quickdev: ${answer.error}`);
        return;
      }
      results.push(answer.result);
    }
    if (!this.comparison) {
      this.comparison = vscode.window.createWebviewPanel(
        `${VIEW_TYPE}.compare`,
        "Compare Runs",
        vscode.ViewColumn.Active,
        {
          enableScripts: false,
          localResourceRoots: [],
        },
      );
      this.comparison.onDidDispose(() => (this.comparison = undefined));
    }
    this.comparison.title = `Compare ${first.runId} · ${second.runId}`;
    this.comparison.webview.html = compareHtml(results[0], results[1], randomBytes(16).toString("base64"));
    this.comparison.reveal();
  }

  dispose(): void {
    this.comparison?.dispose();
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
  }
}
