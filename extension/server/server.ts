// Starts, stops and talks to the language server (`python -m quickdev serve`, bundled).
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  type StaticFeature,
} from "vscode-languageclient/node";
import { log, logChannel } from "../common/logger";
import { lensesWithTooltips } from "./lensTooltips";
import {
  type Answer,
  type CommandAnswer,
  type CommandArgument,
  type CommandName,
  RUN_CHANGED,
  type RunSummary,
} from "./protocol";
import { serverSettings } from "../common/settings";
import type { Interpreter } from "../common/settingsResolve";

/** The bundled libraries and the quickdev package, inside the installed extension. */
export function bundledPaths(extensionPath: string): { libs: string; tool: string } {
  return {
    libs: path.join(extensionPath, "bundled", "libs"),
    tool: path.join(extensionPath, "bundled", "tool"),
  };
}

export function serverEnvironment(extensionPath: string): NodeJS.ProcessEnv {
  const { libs, tool } = bundledPaths(extensionPath);
  const existing = process.env.PYTHONPATH;
  return {
    ...process.env,
    PYTHONPATH: [libs, tool, ...(existing ? [existing] : [])].join(path.delimiter),
    PYTHONUNBUFFERED: "1",
    QUICKDEV_USER_PYTHONPATH: existing ?? "", // jobs get this one, not the bundled libraries
  };
}

/** With a port (developing Quickdev itself), the server waits there for a Python debugger. */
export function serverArguments(debugPort: string | undefined): string[] {
  const serve = ["-m", "quickdev", "serve"];
  return debugPort ? ["-m", "debugpy", "--listen", `127.0.0.1:${debugPort}`, ...serve] : serve;
}

/**
 * A job shows one progress notification, the extension's (jobs.ts): cancellable, with the stage,
 * ending in the run's outcome. Declining work-done progress keeps the server from showing a second
 * one for the same job (the client renders it as a notification too). Registered after the
 * client's own progress feature, so this answer wins.
 */
const oneProgressPerJob: StaticFeature = {
  fillClientCapabilities: (capabilities) => {
    capabilities.window = { ...capabilities.window, workDoneProgress: false };
  },
  initialize: () => undefined,
  getState: () => ({ kind: "static" }),
  clear: () => undefined,
};

export class QuickdevServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private readonly runChanged = new vscode.EventEmitter<RunSummary>();
  private readonly stateChanged = new vscode.EventEmitter<boolean>();
  /** Fires with every `quickdev/runChanged` notification. */
  readonly onRunChanged = this.runChanged.event;
  /** Fires with true when the server is ready, false when it stops. */
  readonly onReadyChanged = this.stateChanged.event;

  /** `settled` resolves when any (re)start in progress has finished. */
  constructor(
    private readonly extensionPath: string,
    private readonly settled: () => Promise<void>,
  ) {}

  get python(): string | undefined {
    return this.interpreter?.path;
  }

  isReady(): boolean {
    return this.client?.state === State.Running;
  }

  async start(interpreter: Interpreter): Promise<void> {
    await this.stop();
    this.interpreter = interpreter;
    const serverOptions: ServerOptions = {
      command: interpreter.path,
      args: serverArguments(process.env.QUICKDEV_DEBUG_SERVER_PORT),
      options: {
        env: serverEnvironment(this.extensionPath),
        cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file", language: "python" }],
      outputChannel: logChannel(),
      traceOutputChannel: logChannel(),
      initializationOptions: serverSettings(interpreter.path),
      // Failures are reported once, in our own words, rather than as a popup per request.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: { provideCodeLenses: lensesWithTooltips(() => this.client) },
    };
    const client = new LanguageClient("quickdev", "Quickdev", serverOptions, clientOptions);
    client.registerFeature(oneProgressPerJob);
    client.onDidChangeState((event) => this.stateChanged.fire(event.newState === State.Running));
    this.client = client;
    log.info(`starting the language server with ${interpreter.path}`);
    const started = performance.now();
    await client.start();
    log.info(`language server ready in ${(performance.now() - started).toFixed(1)} ms`);
    client.onNotification(RUN_CHANGED, (summary: RunSummary) => this.runChanged.fire(summary));
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5_000);
      } catch (error) {
        log.warn(`the language server did not stop cleanly: ${String(error)}`);
      }
      await client.dispose();
    }
  }

  /** Sends the settings that changed without restarting (the interpreter is not among them). */
  async sendSettings(): Promise<void> {
    if (this.client && this.isReady() && this.interpreter) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { quickdev: serverSettings(this.interpreter.path) },
      });
    }
  }

  /** Runs a server command; a failure comes back as `{error}` with a line to show the user. */
  async command<C extends CommandName>(name: C, argument: CommandArgument<C>): Promise<Answer<CommandAnswer<C>>> {
    // A command right after activation or a settings change waits for the server to be up.
    await this.settled();
    if (!this.client || !this.isReady()) {
      return {
        error:
          "The Quickdev language server is not running. See 'Quickdev: Show Log', " +
          "then run 'Quickdev: Restart Server'.",
      };
    }
    try {
      const answer: unknown = await this.client.sendRequest(ExecuteCommandRequest.type, {
        command: name,
        arguments: [argument],
      });
      return answer as Answer<CommandAnswer<C>>;
    } catch (error) {
      const message = (error as Error).message ?? String(error);
      log.error(`${name} failed: ${message}`);
      return { error: `Quickdev: ${name} failed: ${message}` };
    }
  }

  dispose(): void {
    void this.stop();
    this.runChanged.dispose();
    this.stateChanged.dispose();
  }
}
