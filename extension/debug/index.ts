// The `quickdev` debug type: F5 and lenses start a job under debugpy through the language server,
// then attach to it; "Attach to Running Job" attaches to a job (or Python process) already running.
// No Python Debugger extension is needed: attaching talks to the debugpy in the process itself.
// One extension point per module; this one registers them.
import * as vscode from "vscode";
import type { Jobs } from "../jobs/jobs";
import type { QuickdevServer } from "../server/server";
import { AdapterFactory } from "./adapterFactory";
import { DEBUG_TYPE, type QuickdevConfiguration } from "./configuration";
import { ConfigurationProvider } from "./configurationProvider";
import { SessionTracker } from "./sessionTracker";
import { removeTemporaryBreakpoint } from "./temporaryBreakpoints";

export { attachToRunningJob, debugScript } from "./start";

export function registerDebugging(context: vscode.ExtensionContext, jobs: Jobs, server: QuickdevServer): void {
  context.subscriptions.push(
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new ConfigurationProvider(jobs, server)),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AdapterFactory()),
    vscode.debug.registerDebugAdapterTrackerFactory(DEBUG_TYPE, new SessionTracker(jobs)),
    // However the session ends, a breakpoint the lens added goes with it.
    vscode.debug.onDidTerminateDebugSession((session) =>
      removeTemporaryBreakpoint((session.configuration as QuickdevConfiguration).quickdevTemporaryBreakpoint),
    ),
  );
}
