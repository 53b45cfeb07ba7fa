// The script's output of runs started from this window (not debug sessions: theirs goes to
// the Debug Console), live in an output channel per run. The server names the file
// (`outputFile` of the run summary); changes in the run directory wake the reader.
import { type FSWatcher, watch } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { FileTail } from "./fileTail";
import { log } from "../common/logger";
import { type RunSummary, isFinished } from "../server/protocol";
import type { RunStore } from "../runs/runs";

/** Older runs' channels are closed beyond this many, so the Output dropdown stays short. */
const KEPT_CHANNELS = 5;

interface Followed {
  channel: vscode.OutputChannel;
  tail?: FileTail;
  watcher?: FSWatcher;
}

export class RunOutputs implements vscode.Disposable {
  private readonly followed = new Map<string, Followed>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly store: RunStore) {
    this.subscription = store.onDidChange((run) => run && this.changed(run));
  }

  /** Shows the run's output as it is written, from the start. */
  follow(runId: string, label: string): void {
    const channel = vscode.window.createOutputChannel(`Quickdev: ${label} (${runId})`);
    channel.show(true);
    this.followed.set(runId, { channel });
    for (const old of [...this.followed.keys()].slice(0, -KEPT_CHANNELS)) {
      this.stop(old, true);
    }
    const known = this.store.get(runId);
    if (known) {
      this.changed(known);
    }
  }

  /** Opens the output of any run: its channel if followed, else the file the server named. */
  async open(run: RunSummary): Promise<void> {
    const followed = this.followed.get(run.runId);
    if (followed) {
      followed.channel.show(true);
      return;
    }
    try {
      await vscode.window.showTextDocument(vscode.Uri.file(run.outputFile), { preview: true });
    } catch {
      void vscode.window.showWarningMessage(`Quickdev: run ${run.runId} wrote no output (${run.outputFile}).`);
    }
  }

  private changed(run: RunSummary): void {
    const followed = this.followed.get(run.runId);
    if (!followed) {
      return;
    }
    if (!followed.tail && run.outputFile) {
      followed.tail = new FileTail(run.outputFile);
      try {
        followed.watcher = watch(path.dirname(run.outputFile), () => void this.pump(followed));
      } catch (error) {
        log.warn(`following ${run.outputFile}: ${String(error)}`);
      }
    }
    void this.pump(followed).then(() => {
      if (isFinished(run.status)) {
        followed.watcher?.close();
        followed.watcher = undefined;
      }
    });
  }

  private async pump(followed: Followed): Promise<void> {
    const text = await followed.tail?.read();
    if (text) {
      followed.channel.append(text);
    }
  }

  private stop(runId: string, dispose: boolean): void {
    const followed = this.followed.get(runId);
    followed?.watcher?.close();
    if (dispose) {
      followed?.channel.dispose();
      this.followed.delete(runId);
    }
  }

  dispose(): void {
    this.subscription.dispose();
    for (const runId of [...this.followed.keys()]) {
      this.stop(runId, true);
    }
  }
}
