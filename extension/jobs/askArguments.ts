// "Run with Arguments…": asks for a script's arguments, offering the last ones typed for that
// script (kept per script in the workspace's state, as VS Code keeps a workspace's choices).
import * as path from "node:path";
import * as vscode from "vscode";
import { type ArgumentMemory, lastArguments, rememberArguments, splitArguments } from "./arguments";

/** The arguments for `script`, or undefined when the user cancelled the prompt. */
export async function askArguments(memory: ArgumentMemory, script: string): Promise<string[] | undefined> {
  const last = lastArguments(memory, script) ?? "";
  const typed = await vscode.window.showInputBox({
    title: `Quickdev: arguments for ${path.basename(script)}`,
    prompt: "The script's command-line arguments, as typed after the script in a terminal",
    placeHolder: "config/train.py --batch_size=8",
    value: last,
    valueSelection: [0, last.length],
    ignoreFocusOut: true,
  });
  if (typed === undefined) {
    return undefined;
  }
  await rememberArguments(memory, script, typed.trim());
  return splitArguments(typed);
}
