// Runs started anywhere (a terminal, another window) appear in the Runs view without Refresh.
// Runs started here need none of this: runChanged already brings them.
//
// VS Code's file watcher cannot be relied on for it. Inside a workspace folder every recursive
// watch is served by the folder's one recursive watcher (VS Code drops a request below a path it
// already watches), and on Linux that watcher (@parcel/watcher's inotify backend,
// parcel-bundler/watcher#97) does not watch directories made together with their parent: after
// a job's `mkdir -p .quickdev/runs/<id>` nothing below `.quickdev` is reported for the rest of the
// session, in code-server and desktop VS Code alike. So while the view is visible the runs
// directories are polled, cheaply (a stamp of names and mtimes, runsStamp.ts), and the server is
// asked for the list again only when the stamp changed. The watcher stays as a hint: where it
// works (macOS, Windows, a runs directory made before the folder was opened) a change shows
// without waiting for the next poll, and the stamp keeps it from costing a second listing.
import { existsSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { SECTION, readSettings, variableContext } from "../common/settings";
import { runsStamp } from "./runsStamp";
import { watchBase } from "./runsWatchBase";
import { resolveVariables } from "../common/settingsResolve";

const QUIET_MS = 1_000;
const POLL_MS = 2_000;

export class RunsWatcher implements vscode.Disposable {
  private watchers: vscode.FileSystemWatcher[] = [];
  private runsDirs: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private poll: NodeJS.Timeout | undefined;
  private lastStamp: string | undefined;
  private checking: Promise<void> | undefined;
  private checkAgain = false;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly refresh: () => Promise<boolean>,
    private readonly view: vscode.TreeView<unknown>,
  ) {
    this.subscriptions = [
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.watch()),
      vscode.workspace.onDidChangeConfiguration(
        (event) => event.affectsConfiguration(`${SECTION}.runsDir`) && this.watch(),
      ),
      view.onDidChangeVisibility(() => this.pollWhileVisible()),
    ];
    this.watch();
    this.pollWhileVisible();
  }

  private watch(): void {
    this.stopWatching();
    const patterns = new Map<string, vscode.RelativePattern>();
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      const runsDir = resolveVariables(readSettings().runsDir, {
        ...variableContext(),
        workspaceFolder: folder.uri.fsPath,
      });
      const root = path.isAbsolute(runsDir) ? runsDir : path.join(folder.uri.fsPath, runsDir);
      // A run is a directory of files below the runs directory; any change there may be one.
      const { base, pattern } = watchBase(root, folder.uri.fsPath, existsSync);
      patterns.set(root, new vscode.RelativePattern(vscode.Uri.file(base), pattern));
    }
    this.runsDirs = [...patterns.keys()];
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
        void this.check();
      }, QUIET_MS);
    }
  }

  private pollWhileVisible(): void {
    clearInterval(this.poll);
    this.poll = undefined;
    if (this.view.visible) {
      void this.check();
      this.poll = setInterval(() => void this.check(), POLL_MS);
    }
  }

  /** Lists the runs again when the runs directories changed since the last listing; one at a time. */
  private async check(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.checkAgain = false;
        const stamp = await runsStamp(this.runsDirs);
        // Kept only once listed: a change seen while the server was away is listed next time.
        if (stamp !== this.lastStamp && (await this.refresh())) {
          this.lastStamp = stamp;
        }
      } while (this.checkAgain);
    })().finally(() => (this.checking = undefined));
    return this.checking;
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
    clearInterval(this.poll);
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
