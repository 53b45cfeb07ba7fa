// Breakpoints a "Debug this step" lens adds for one session: kept by the id its debug
// configuration carries, removed once hit or when the session ends, whichever comes first.
import { randomUUID } from "node:crypto";
import * as vscode from "vscode";

const added = new Map<string, vscode.SourceBreakpoint>();

/**
 * Adds a breakpoint at `file`, 0-based `line` and answers its id, or undefined when the user
 * already has one there (theirs stays as it is).
 */
export function addTemporaryBreakpoint(file: string, line: number): string | undefined {
  const target = vscode.Uri.file(file);
  const already = vscode.debug.breakpoints.some(
    (breakpoint) =>
      breakpoint instanceof vscode.SourceBreakpoint &&
      breakpoint.location.uri.fsPath === target.fsPath &&
      breakpoint.location.range.start.line === line,
  );
  if (already) {
    return undefined;
  }
  const id = randomUUID();
  const breakpoint = new vscode.SourceBreakpoint(new vscode.Location(target, new vscode.Position(line, 0)));
  added.set(id, breakpoint);
  vscode.debug.addBreakpoints([breakpoint]);
  return id;
}

export function temporaryBreakpoint(id: string): vscode.SourceBreakpoint | undefined {
  return added.get(id);
}

export function removeTemporaryBreakpoint(id: string | undefined): void {
  const breakpoint = id ? added.get(id) : undefined;
  if (id && breakpoint) {
    added.delete(id);
    vscode.debug.removeBreakpoints([breakpoint]);
  }
}
