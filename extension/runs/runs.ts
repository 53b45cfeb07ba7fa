// What the extension knows about runs: the latest summary of each, fed by `quickdev/runChanged`.
import * as vscode from "vscode";
import { type RunSummary, isFinished } from "../server/protocol";

export class RunStore implements vscode.Disposable {
  private readonly runs = new Map<string, RunSummary>();
  private readonly changed = new vscode.EventEmitter<RunSummary | undefined>();
  /** Fires with the run that changed, or undefined when the whole list was replaced. */
  readonly onDidChange = this.changed.event;

  update(summary: RunSummary): void {
    // Re-inserting keeps the map in start order with the newest run last.
    if (!this.runs.has(summary.runId)) {
      this.runs.set(summary.runId, summary);
    } else {
      this.runs.set(summary.runId, { ...this.runs.get(summary.runId), ...summary });
    }
    this.changed.fire(this.runs.get(summary.runId));
  }

  replaceAll(summaries: readonly RunSummary[]): void {
    this.runs.clear();
    for (const summary of summaries) {
      this.runs.set(summary.runId, summary);
    }
    this.changed.fire(undefined);
  }

  get(runId: string): RunSummary | undefined {
    return this.runs.get(runId);
  }

  /** Newest first by start time, whatever order the server or the notifications came in. */
  all(): RunSummary[] {
    return [...this.runs.values()].sort((a, b) => b.started.localeCompare(a.started) || b.runId.localeCompare(a.runId));
  }

  /** Resolves with the run's final summary; undefined if `token` is cancelled first. */
  waitForEnd(runId: string, token?: vscode.CancellationToken): Promise<RunSummary | undefined> {
    return new Promise((resolve) => {
      const finish = (value: RunSummary | undefined): void => {
        listener.dispose();
        cancellation?.dispose();
        resolve(value);
      };
      const listener = this.onDidChange(() => {
        const run = this.runs.get(runId);
        if (run && isFinished(run.status)) {
          finish(run);
        }
      });
      const cancellation = token?.onCancellationRequested(() => finish(undefined));
      const known = this.runs.get(runId);
      if (known && isFinished(known.status)) {
        finish(known);
      }
    });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
