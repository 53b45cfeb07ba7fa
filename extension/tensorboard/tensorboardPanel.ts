// TensorBoard in a webview: one panel per TensorBoard server (one server per runs directory).
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { log } from "../common/logger";
import { type Answer, isError } from "../server/protocol";
import { type SourceLink, originOf, parseSourceLink, tensorBoardHtml, withProfilerPlugin } from "./tensorboardPage";

const VIEW_TYPE = "quickdev.tensorboard";

/** The address the webview can load: a port-forwarded or proxied one when remote. */
async function externalUrl(url: string): Promise<string> {
  const parsed = new URL(url);
  const external = await vscode.env.asExternalUri(vscode.Uri.parse(`${parsed.origin}/`));
  const base = external.toString(true).replace(/\/$/, "");
  return `${base}${parsed.pathname}${parsed.search}${parsed.hash}`;
}

/** The server's quickdev.resolveSource: the file a frame names, through the run's source roots. */
export type ResolveSource = (argument: { filename: string; runId?: string }) => Promise<Answer<{ path: string }>>;

export class TensorBoardPanels implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  private readonly shown = new Map<string, string>();
  /** The run each panel was last opened on: its frames are tried against its roots first. */
  private readonly runs = new Map<string, string | undefined>();

  constructor(private readonly resolveSource: ResolveSource) {}

  /** Shows `url` (a TensorBoard page) in the panel of its server, creating it if needed. */
  async show(url: string, title: string, runId?: string): Promise<void> {
    const key = originOf(url);
    const frameUrl = await externalUrl(withProfilerPlugin(url));
    log.info(`TensorBoard ${url} shown as ${frameUrl}`);
    let panel = this.panels.get(key);
    if (!panel) {
      panel = vscode.window.createWebviewPanel(VIEW_TYPE, title, vscode.ViewColumn.Active, {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [],
      });
      this.panels.set(key, panel);
      const created = panel;
      created.onDidDispose(() => {
        this.panels.delete(key);
        this.shown.delete(key);
        this.runs.delete(key);
      });
      created.webview.onDidReceiveMessage((message: unknown) => {
        const link = parseSourceLink(message);
        if (link) {
          void openSource(link, () => this.resolveSource({ filename: link.filename, runId: this.runs.get(key) }));
        }
      });
    }
    panel.title = title;
    this.runs.set(key, runId);
    // Setting the same page again would reload TensorBoard and lose the user's place in it.
    if (this.shown.get(key) !== frameUrl) {
      this.shown.set(key, frameUrl);
      panel.webview.html = tensorBoardHtml(frameUrl, randomBytes(16).toString("base64"));
    }
    panel.reveal();
  }

  /** Reloads the active TensorBoard panel (new runs appear after a reload). */
  refreshActive(): void {
    for (const panel of this.panels.values()) {
      if (panel.active) {
        void panel.webview.postMessage({ type: "refresh" });
      }
    }
  }

  dispose(): void {
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
  }
}

/**
 * Opens a profiler stack frame's file beside the panel. The server finds it through the run's
 * recorded source roots (any workspace folder, the job interpreter's site-packages); only a file
 * found nowhere makes the user locate it.
 */
export async function openSource(link: SourceLink, resolve: () => ReturnType<ResolveSource>): Promise<void> {
  const answer = await resolve();
  let uri: vscode.Uri;
  if (isError(answer)) {
    log.warn(`source link ${link.filename}: ${answer.error}`);
    const choice = await vscode.window.showWarningMessage(`Quickdev: ${answer.error}. Locate the file?`, "Locate…");
    if (choice !== "Locate…") {
      return;
    }
    const picked = await vscode.window.showOpenDialog({
      canSelectMany: false,
      openLabel: `Open as ${path.basename(link.filename)}`,
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    if (!picked?.[0]) {
      return;
    }
    uri = picked[0];
  } else {
    uri = vscode.Uri.file(answer.path);
  }
  const document = await vscode.workspace.openTextDocument(uri);
  const line = Math.min(link.line, Math.max(document.lineCount - 1, 0));
  const position = new vscode.Position(line, 0);
  await vscode.window.showTextDocument(document, {
    viewColumn: vscode.ViewColumn.Beside,
    selection: new vscode.Range(position, position),
    preserveFocus: false,
  });
}
