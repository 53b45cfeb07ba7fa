// The one log of the extension: a log output channel that the language client shares.
import * as vscode from "vscode";

let channel: vscode.LogOutputChannel | undefined;

export function createLogger(): vscode.LogOutputChannel {
  channel = vscode.window.createOutputChannel("Torch Quickdev", { log: true });
  return channel;
}

export function logChannel(): vscode.LogOutputChannel {
  if (!channel) {
    throw new Error("the logger is created in activate() before anything logs");
  }
  return channel;
}

export const log = {
  info: (message: string): void => channel?.info(message),
  warn: (message: string): void => channel?.warn(message),
  error: (message: string): void => channel?.error(message),
  debug: (message: string): void => channel?.debug(message),
};

export function showLog(): void {
  channel?.show(true);
}
