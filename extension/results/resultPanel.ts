// "Open Result": a run's result.json as a readable page (resultPage.ts) in one panel that the
// next result reuses, as VS Code's preview editor is reused by the next file opened; "Compare
// Runs": two of them side by side, in one panel reused the same way. A panel showing a run that
// is deleted closes. The server reads the file: the layout is the backend's.
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { type RunSummary, isError } from "../server/protocol";
import { compareHtml } from "./comparePage";
import { resultHtml } from "./resultPage";
import type { QuickdevServer } from "../server/server";

const VIEW_TYPE = "quickdev.result";

interface Shown {
  panel: vscode.WebviewPanel;
  runIds: string[];
}

export class ResultPanels implements vscode.Disposable {
  private result: Shown | undefined;
  private comparison: Shown | undefined;

  constructor(private readonly server: QuickdevServer) {}

  async show(run: RunSummary): Promise<void> {
    const answer = await this.server.command("quickdev.getRun", { runId: run.runId });
    if (isError(answer)) {
      void vscode.window.showWarningMessage(`Quickdev: ${answer.error}`);
      return;
    }
    const shown = this.result ?? this.open("result", "Run");
    this.result = shown;
    shown.runIds = [run.runId];
    shown.panel.title = `Run ${run.runId}`;
    shown.panel.webview.html = resultHtml(
      answer.result,
      randomBytes(16).toString("base64"),
      answer.run.changes,
      answer.run.memoryForecast,
      answer.run.verdict,
    );
    shown.panel.reveal();
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
    const shown = this.comparison ?? this.open("compare", "Compare Runs");
    this.comparison = shown;
    shown.runIds = [first.runId, second.runId];
    shown.panel.title = `Compare ${first.runId} · ${second.runId}`;
    shown.panel.webview.html = compareHtml(results[0], results[1], randomBytes(16).toString("base64"));
    shown.panel.reveal();
  }

  /** Closes what shows a run that is gone: deleted here, or no longer among `known` runs. */
  closeGone(known: (runId: string) => boolean): void {
    for (const shown of [this.result, this.comparison]) {
      if (shown && shown.runIds.some((runId) => !known(runId))) {
        shown.panel.dispose();
      }
    }
  }

  private open(kind: "result" | "compare", title: string): Shown {
    // No scripts: the page is static HTML under a CSP that allows only its own style.
    const panel = vscode.window.createWebviewPanel(
      kind === "result" ? VIEW_TYPE : `${VIEW_TYPE}.compare`,
      title,
      vscode.ViewColumn.Active,
      {
        enableScripts: false,
        localResourceRoots: [],
      },
    );
    const shown: Shown = { panel, runIds: [] };
    panel.onDidDispose(() => {
      if (this.result === shown) {
        this.result = undefined;
      }
      if (this.comparison === shown) {
        this.comparison = undefined;
      }
    });
    return shown;
  }

  dispose(): void {
    this.comparison?.panel.dispose();
    this.result?.panel.dispose();
  }
}
