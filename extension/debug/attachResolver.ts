// Resolves an attach configuration: as written when it names a port, else through the picker of
// running quick-dev jobs (and other Python processes), as "Attach to Running Job" does.
import type * as vscode from "vscode";
import { pickAttachTarget } from "./attachPicker";
import type { QuickdevServer } from "../server/server";
import { type QuickdevConfiguration, SESSION_OPTIONS, attachToPicked } from "./configuration";

export async function resolveAttach(
  server: QuickdevServer,
  config: QuickdevConfiguration,
  token?: vscode.CancellationToken,
): Promise<QuickdevConfiguration | undefined> {
  if (config.connect?.port) {
    return { ...config, ...SESSION_OPTIONS };
  }
  const target = await pickAttachTarget(server);
  if (!target || token?.isCancellationRequested) {
    return undefined;
  }
  return attachToPicked(config, target);
}
