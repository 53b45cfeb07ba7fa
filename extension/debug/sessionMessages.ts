// What the session tracker needs to know about a DAP message, as a pure function of the message.
// No vscode import: unit tests load this module under plain node.

export type SessionEvent =
  | { kind: "debuggeeEnded" }
  | { kind: "stoppedAtBreakpoint"; threadId: number | undefined }
  | { kind: "userDisconnects" };

export interface Message {
  type?: string;
  event?: string;
  command?: string;
  body?: { reason?: string; threadId?: number };
}

/** A message the debug adapter sent to the editor. */
export function fromAdapter(message: Message): SessionEvent | undefined {
  if (message.type !== "event") {
    return undefined;
  }
  if (message.event === "exited" || message.event === "terminated") {
    return { kind: "debuggeeEnded" };
  }
  if (message.event === "stopped" && message.body?.reason === "breakpoint") {
    return { kind: "stoppedAtBreakpoint", threadId: message.body.threadId };
  }
  return undefined;
}

/** A message the editor sends to the debug adapter. */
export function fromEditor(message: Message): SessionEvent | undefined {
  return message.type === "request" && message.command === "disconnect" ? { kind: "userDisconnects" } : undefined;
}
