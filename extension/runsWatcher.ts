// Runs started anywhere (a terminal, another window) appear in the Runs view without Refresh:
// a file watcher on each folder's runs directory asks the server for the list again, at most
// once a second. Runs started here need none of this: runChanged already brings them.
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { SECTION, readSettings, variableContext } from "./settings";
import { watchBase } from "./runsWatchBase";
import { resolveVariables } from "./settingsResolve";

const QUIET_MS = 1_000;

export class RunsWatcher implements vscode.Disposable {
  private watchers: vscode.FileSystemWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly refresh: () => Promise<void>) {
    this.subscriptions = [
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.watch()),
      vscode.workspace.onDidChangeConfiguration((event) => event.affectsConfiguration(`${SECTION}.runsDir`) && this.watch()),
    ];
    this.watch();
  }

  private watch(): void {
    this.stopWatching();
    const patterns = new Map<string, vscode.RelativePattern>();
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const runsDir = resolveVariables(readSettings().runsDir, { ...variableContext(), workspaceFolder: folder.uri.fsPath });
      const root = path.isAbsolute(runsDir) ? runsDir : path.join(folder.uri.fsPath, runsDir);
      // A run is a directory of files below the runs directory; any change there may be one.
      const { base, pattern } = watchBase(root, folder.uri.fsPath, existsSync);
      patterns.set(root, new vscode.RelativePattern(vscode.Uri.file(base), pattern));
    }
    for (const pattern of patterns.values()) {
      const watcher = vscode.workspace.createFileSystemWatcher(pattern);
      const changed = (): void => this.soon();
      watcher.onDidCreate(changed);
      watcher.onDidChange(changed);
      watcher.onDidDelete(changed);
      this.watchers.push(watcher);
    }
  }

  private soon(): void {
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.refresh();
      }, QUIET_MS);
    }
  }

  private stopWatching(): void {
    for (const watcher of this.watchers) {
      watcher.dispose();
    }
    this.watchers = [];
  }

  dispose(): void {
    this.stopWatching();
    clearTimeout(this.timer);
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
