// Watches each quickdev session: removes a temporary breakpoint once it is hit, and cancels the
// job when the user stops debugging (an attach session would otherwise leave it running).
import * as path from "node:path";
import * as vscode from "vscode";
import type { Jobs } from "../jobs/jobs";
import { log } from "../common/logger";
import type { QuickdevConfiguration } from "./configuration";
import { type Message, fromAdapter, fromEditor } from "./sessionMessages";
import { removeTemporaryBreakpoint, temporaryBreakpoint } from "./temporaryBreakpoints";

export class SessionTracker implements vscode.DebugAdapterTrackerFactory {
  constructor(private readonly jobs: Jobs) {}

  createDebugAdapterTracker(session: vscode.DebugSession): vscode.DebugAdapterTracker {
    const config = session.configuration as QuickdevConfiguration;
    const temporaryId = config.quickdevTemporaryBreakpoint;
    let debuggeeEnded = false;
    return {
      onDidSendMessage: (message: Message) => {
        const event = fromAdapter(message);
        if (event?.kind === "debuggeeEnded") {
          debuggeeEnded = true;
        } else if (event?.kind === "stoppedAtBreakpoint" && temporaryId) {
          void this.removeIfHit(session, temporaryId, event.threadId);
        }
      },
      onWillReceiveMessage: (message: Message) => {
        if (fromEditor(message)?.kind === "userDisconnects" && !debuggeeEnded && config.quickdevRunId) {
          log.info(`debugging stopped by the user: cancelling run ${config.quickdevRunId}`);
          void this.jobs.cancel(config.quickdevRunId);
        }
      },
    };
  }

  private async removeIfHit(session: vscode.DebugSession, id: string, threadId: number | undefined): Promise<void> {
    const breakpoint = temporaryBreakpoint(id);
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
