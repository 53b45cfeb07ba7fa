// The `quickdev` debug type: F5 and lenses start a job under debugpy through the language server,
// then attach to it; "Attach to Running Job" attaches to a job (or Python process) already running.
// No Python Debugger extension is needed: attaching talks to the debugpy in the process itself.
import { randomUUID } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { pickAttachTarget } from "./attachPicker";
import type { Jobs } from "./jobs";
import { ATTACH_TO_RUNNING_JOB } from "./launchConfigs";
import { log } from "./logger";
import { type QuickdevServer, bundledPaths } from "./server";
import { ensureTrusted } from "./trust";

export const DEBUG_TYPE = "quickdev";

interface QuickdevConfiguration extends vscode.DebugConfiguration {
  script?: string;
  mode?: "debug" | "profile" | "run";
  cwd?: string;
  args?: string[];
  batches?: number;
  breakAt?: { file: string; line: number };
  quickdevRunId?: string;
  quickdevTemporaryBreakpoint?: string;
}

/** Breakpoints a "Debug this step" lens added, by the id its debug configuration carries. */
const temporaryBreakpoints = new Map<string, vscode.SourceBreakpoint>();

function removeTemporaryBreakpoint(id: string | undefined): void {
  const breakpoint = id ? temporaryBreakpoints.get(id) : undefined;
  if (id && breakpoint) {
    temporaryBreakpoints.delete(id);
    vscode.debug.removeBreakpoints([breakpoint]);
  }
}

class ConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(
    private readonly jobs: Jobs,
    private readonly server: QuickdevServer,
  ) {}

  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: QuickdevConfiguration,
  ): vscode.DebugConfiguration | undefined {
    // F5 without a launch.json: quick-dev debug the file in the editor.
    if (!config.type && !config.request && !config.name) {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId !== "python") {
        void vscode.window.showErrorMessage("Quickdev: open a Python training script to debug it.");
        return undefined;
      }
      return { type: DEBUG_TYPE, request: "launch", name: "Quickdev: debug current file", script: "${file}" };
    }
    return config;
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    _folder: vscode.WorkspaceFolder | undefined,
    config: QuickdevConfiguration,
    token?: vscode.CancellationToken,
  ): Promise<vscode.DebugConfiguration | undefined> {
    if (!ensureTrusted()) {
      return undefined;
    }
    if (config.request === "attach") {
      const connect = (config as { connect?: { port?: number } }).connect;
      if (connect?.port) {
        return { ...config, justMyCode: false };
      }
      // No address: the running job (or process) is picked now, as "Attach to Running Job" does.
      const target = await pickAttachTarget(this.server);
      if (!target || token?.isCancellationRequested) {
        return undefined;
      }
      // No quickdevRunId: stopping this session detaches and leaves the long job running.
      return {
        ...config,
        name: `${config.name}: ${target.label}`,
        connect: { host: target.host, port: target.port },
        justMyCode: false,
      };
    }
    if (!config.script) {
      void vscode.window.showErrorMessage(
        `Quickdev: the launch configuration "${config.name}" has no "script"; add the training script's path.`,
      );
      return undefined;
    }
    const options = { cwd: config.cwd, args: config.args, batches: config.batches };
    const mode = config.mode ?? "debug";
    if (mode !== "debug") {
      // Not a debug session: the job runs with progress and the debug launch ends here.
      void this.jobs.run(mode, config.script, options);
      return undefined;
    }
    const answer = await this.jobs.startDebug({ script: config.script, ...options, breakAt: config.breakAt }, token);
    if (!answer?.attach) {
      return undefined;
    }
    return {
      type: DEBUG_TYPE,
      name: config.name,
      request: "attach",
      connect: answer.attach,
      justMyCode: false,
      quickdevRunId: answer.runId,
      quickdevTemporaryBreakpoint: config.quickdevTemporaryBreakpoint,
    };
  }
}

class AdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  constructor(
    private readonly extensionPath: string,
    private readonly python: () => string | undefined,
  ) {}

  createDebugAdapterDescriptor(session: vscode.DebugSession): vscode.ProviderResult<vscode.DebugAdapterDescriptor> {
    const connect = (session.configuration as { connect?: { host?: string; port?: number } }).connect;
    if (session.configuration.request === "attach" && connect?.port) {
      // The process serves DAP on that port itself: a quick-dev job runs debugpy's adapter
      // in-process (runner/debug.py), an injected debugpy.listen() its own adapter. Talk to it
      // directly, as the Python Debugger extension does for "connect".
      log.info(`debug adapter: the job's debugpy at ${connect.host ?? "127.0.0.1"}:${connect.port}`);
      return new vscode.DebugAdapterServer(connect.port, connect.host ?? "127.0.0.1");
    }
    const python = this.python();
    if (!python) {
      throw new Error("Quickdev: the language server is not running, so no interpreter is chosen yet.");
    }
    // `python <dir>/debugpy/adapter` runs the adapter's __main__, which finds its own package.
    const adapter = path.join(bundledPaths(this.extensionPath).libs, "debugpy", "adapter");
    log.info(`debug adapter: ${python} ${adapter}`);
    return new vscode.DebugAdapterExecutable(python, [adapter]);
  }
}

/**
 * Watches each quickdev session: removes a temporary breakpoint once it is hit, and cancels the
 * job when the user stops debugging (attach sessions would otherwise leave it running).
 */
class SessionTracker implements vscode.DebugAdapterTrackerFactory {
  constructor(private readonly jobs: Jobs) {}

  createDebugAdapterTracker(session: vscode.DebugSession): vscode.DebugAdapterTracker {
    const config = session.configuration as QuickdevConfiguration;
    const temporaryId = config.quickdevTemporaryBreakpoint;
    let debuggeeEnded = false;
    return {
      onDidSendMessage: (message: { type?: string; event?: string; body?: { reason?: string; threadId?: number } }) => {
        if (message.type !== "event") {
          return;
        }
        if (message.event === "exited" || message.event === "terminated") {
          debuggeeEnded = true;
        }
        if (message.event === "stopped" && message.body?.reason === "breakpoint" && temporaryId) {
          void this.removeIfHit(session, temporaryId, message.body.threadId);
        }
      },
      onWillReceiveMessage: (message: { type?: string; command?: string }) => {
        if (message.type === "request" && message.command === "disconnect" && !debuggeeEnded && config.quickdevRunId) {
          log.info(`debugging stopped by the user: cancelling run ${config.quickdevRunId}`);
          void this.jobs.cancel(config.quickdevRunId);
        }
      },
    };
  }

  private async removeIfHit(session: vscode.DebugSession, id: string, threadId: number | undefined): Promise<void> {
    const breakpoint = temporaryBreakpoints.get(id);
    if (!breakpoint || threadId === undefined) {
      return;
    }
    try {
      const trace = (await session.customRequest("stackTrace", { threadId, startFrame: 0, levels: 1 })) as {
        stackFrames: { line: number; source?: { path?: string } }[];
      };
      const top = trace.stackFrames[0];
      const where = breakpoint.location;
      const hit =
        !!top?.source?.path &&
        localPath(top.source.path) === path.resolve(where.uri.fsPath) &&
        top.line === where.range.start.line + 1;
      log.info(`stopped at ${top?.source?.path}:${top?.line}; temporary breakpoint ${hit ? "hit, removed" : "kept"}`);
      if (hit) {
        removeTemporaryBreakpoint(id);
      }
    } catch (error) {
      log.warn(`could not read the stack to clear a temporary breakpoint: ${String(error)}`);
    }
  }
}

/** A frame's path as the tracker sees it: plain, or a URI (remote windows, code-server). */
function localPath(value: string): string {
  return /^[a-z][\w+.-]+:\/\//i.test(value) ? path.resolve(vscode.Uri.parse(value).fsPath) : path.resolve(value);
}

export function registerDebugging(
  context: vscode.ExtensionContext,
  jobs: Jobs,
  server: QuickdevServer,
): void {
  const python = (): string | undefined => server.python;
  context.subscriptions.push(
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new ConfigurationProvider(jobs, server)),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AdapterFactory(context.extensionPath, python)),
    vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, new SessionTracker(jobs)),
    // However the session ends, a breakpoint the lens added goes with it.
    vscode.debug.onDidTerminateDebugSession((session) =>
      removeTemporaryBreakpoint((session.configuration as QuickdevConfiguration).quickdevTemporaryBreakpoint),
    ),
  );
}

/**
 * Debugs a script as a quick-dev job; with `at` (a file and 0-based line, e.g. a training step),
 * stops there first by adding a breakpoint that is removed again once hit (unless the user had
 * one there already).
 */
export async function debugScript(script: string, at?: { file: string; line: number }): Promise<boolean> {
  if (!ensureTrusted()) {
    return false;
  }
  const uri = vscode.Uri.file(script);
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  let temporaryId: string | undefined;
  if (at) {
    const target = vscode.Uri.file(at.file);
    const already = vscode.debug.breakpoints.some(
      (breakpoint) =>
        breakpoint instanceof vscode.SourceBreakpoint &&
        breakpoint.location.uri.fsPath === target.fsPath &&
        breakpoint.location.range.start.line === at.line,
    );
    if (!already) {
      temporaryId = randomUUID();
      const breakpoint = new vscode.SourceBreakpoint(new vscode.Location(target, new vscode.Position(at.line, 0)));
      temporaryBreakpoints.set(temporaryId, breakpoint);
      vscode.debug.addBreakpoints([breakpoint]);
    }
  }
  const config: QuickdevConfiguration = {
    type: DEBUG_TYPE,
    request: "launch",
    name: `Quickdev: debug ${path.basename(script)}`,
    mode: "debug",
    script,
    cwd: folder?.uri.fsPath ?? path.dirname(script),
    breakAt: at,
    quickdevTemporaryBreakpoint: temporaryId,
  };
  const started = await vscode.debug.startDebugging(folder, config);
  if (!started) {
    removeTemporaryBreakpoint(temporaryId);
  }
  return started;
}

/** "Quickdev: Attach to Running Job": the attach configuration, resolved through the picker. */
export async function attachToRunningJob(): Promise<boolean> {
  if (!ensureTrusted()) {
    return false;
  }
  return vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], {
    type: DEBUG_TYPE,
    request: "attach",
    name: ATTACH_TO_RUNNING_JOB,
  });
}
